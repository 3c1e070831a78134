-- Grain: one row per group and configuration (assignor x protocol x static membership x
-- commit-on-revoke x timeouts): the current one with what gold measured beside its replay,
-- every candidate with its predicted figures; rank 1 is the cheapest by duplicates, then pause.
with what_if as (
    select * from {{ ref('stg_lens__what_if') }}
)

select
    *,
    rank() over (partition by group_id order by predicted_duplicates asc, predicted_paused_partition_s asc)
        as cost_rank
from what_if
