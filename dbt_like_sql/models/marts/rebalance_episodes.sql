-- Grain: one row per rebalance episode, with what its handoffs cost (the report's timeline).
with episodes as (
    select * from {{ ref('stg_lens__episodes') }}
),

costs as (
    select
        episode_id,
        sum(duplicates) as duplicates,
        sum(paused_s) as paused_partition_s
    from {{ ref('stg_lens__handoffs') }}
    where episode_id is not null
    group by episode_id
)

select
    episodes.*,
    coalesce(costs.duplicates, 0) as duplicates,
    coalesce(costs.paused_partition_s, 0.0) as paused_partition_s
from episodes
left join costs on episodes.episode_id = costs.episode_id
