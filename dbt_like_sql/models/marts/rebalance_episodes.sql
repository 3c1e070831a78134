-- Grain: one row per rebalance episode, with what its handoffs cost (the report's timeline).
{{ config(unique_key='episode_id') }}

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
        sum(duplicates_upper) as duplicates_upper,
        sum(pause_s) as pause_s,
        sum(pause_upper_s) as pause_upper_s,
        -- the most likely totals: each handoff's estimate, its point figure where it has none
        sum(coalesce(duplicates_estimate, duplicates)) as duplicates_estimate,
        sum(coalesce(pause_estimate_s, pause_s)) as pause_estimate_s
    from handoffs
    where episode_id is not null
    group by episode_id
)

select
    episodes.*,
    coalesce(costs.duplicates, 0) as duplicates,
    coalesce(costs.duplicates_upper, 0) as duplicates_upper,
    coalesce(costs.pause_s, 0.0) as pause_s,
    coalesce(costs.pause_upper_s, 0.0) as pause_upper_s,
    coalesce(costs.duplicates_estimate, 0) as duplicates_estimate,
    coalesce(costs.pause_estimate_s, 0.0) as pause_estimate_s,
    {{ built_through_batch() }} as built_through_batch
from episodes
left join costs on episodes.episode_id = costs.episode_id
