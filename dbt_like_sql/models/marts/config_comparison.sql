-- Grain: one row per group and configuration (assignor x protocol x static membership x
-- commit-on-revoke x timeouts): the current one with what gold measured beside its replay,
-- every candidate with its predicted figures; rank 1 is the cheapest by duplicates, then pause.
{{ config(unique_key=['cluster_id', 'group_id', 'config']) }}

with what_if as (
    select * from {{ ref('stg_lens__what_if') }}
    {{ only_changed() }}
)

select
    *,
    rank() over (partition by cluster_id, group_id order by predicted_duplicates asc, predicted_pause_s asc)
        as cost_rank,
    {{ built_through_batch() }} as built_through_batch
from what_if
