-- Grain: one row per rebalance episode, with what its handoffs cost (the report's timeline).
{{ config(unique_key='episode_id') }}
-- depends_on: {{ ref('stg_lens__events') }}

with episodes as (
    select * from {{ ref('stg_lens__episodes') }}
    {{ only_changed() }}
),

handoffs as (
    select * from {{ ref('stg_lens__handoffs') }}
    {{ only_changed() }}
),

costs as (
    select
        episode_id,
        sum(duplicates) as duplicates,
        sum(paused_s) as paused_partition_s
    from handoffs
    where episode_id is not null
    group by episode_id
)

select
    episodes.*,
    coalesce(costs.duplicates, 0) as duplicates,
    coalesce(costs.paused_partition_s, 0.0) as paused_partition_s,
    {{ built_through_batch() }} as built_through_batch
from episodes
left join costs on episodes.episode_id = costs.episode_id
