-- Grain: one row per group and host: the handoffs its member processes caused and what they
-- cost (a host whose members restart or crash stands out).
with members as (
    select * from {{ ref('member_costs') }}
)

select
    group_id,
    coalesce(host, 'unknown') as host,
    count(*) as member_processes,
    sum(handoffs) as handoffs,
    sum(lost_partitions) as lost_partitions,
    sum(duplicates) as duplicates,
    sum(paused_partition_s) as paused_partition_s
from members
group by group_id, coalesce(host, 'unknown')
