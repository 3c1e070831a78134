-- Grain: one row per group and host: the handoffs its member processes caused and what they
-- cost (a host whose members restart or crash stands out).
{{ config(unique_key=['cluster_id', 'group_id', 'host']) }}

with members as (
    select * from {{ ref('member_costs') }}
    {{ only_changed() }}
)

select
    cluster_id,
    group_id,
    coalesce(host, 'unknown') as host,
    count(*) as member_processes,
    sum(handoffs) as handoffs,
    sum(lost_partitions) as lost_partitions,
    sum(duplicates) as duplicates,
    sum(duplicates_upper) as duplicates_upper,
    sum(pause_s) as pause_s,
    sum(pause_upper_s) as pause_upper_s,
    {{ built_through_batch() }} as built_through_batch
from members
group by cluster_id, group_id, coalesce(host, 'unknown')
