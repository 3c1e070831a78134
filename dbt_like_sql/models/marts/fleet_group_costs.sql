-- Grain: one row per group the lake knows (every group the broker's log shows, whatever its members run,
-- and every group with the agent): what its rebalances cost over all the data in the lake, how much of that
-- the broker alone saw (bounds) and how much the agent saw exactly, its two coverage figures, and its rank,
-- costliest first. A table rebuilt whole each build, not an incremental mart: a group without the agent
-- sends no telemetry to scope an incremental build by.
--
-- The ordering (cost_rank 1: the costliest), declared here once: the most likely duplicates (each handoff's
-- estimate, its point figure where it has none), then the most likely paused partition-seconds, then the
-- upper bounds (of two groups alike, the one that can have cost more), then the names.
{{ config(materialized='table', unique_key=['cluster_id', 'group_id']) }}

with handoffs as (
    select * from {{ ref('stg_lens__handoffs') }}
    where episode_id is not null  -- as gold/metrics counts them: the handoffs of its episodes
),

episodes as (
    select * from {{ ref('stg_lens__episodes') }}
),

coverage as (
    select
        cluster_id,
        group_id,
        sum(covered_s) as covered_s,
        sum(broker_covered_s) as broker_covered_s,
        sum(owned_s) as owned_s
    from {{ ref('stg_lens__coverage') }}
    group by cluster_id, group_id
),

costs as (
    select
        cluster_id,
        group_id,
        count(*) as handoffs,
        count_if(source = 'broker') as broker_handoffs,
        sum(duplicates) as duplicates,
        sum(duplicates_upper) as duplicates_upper,
        sum(coalesce(duplicates_estimate, duplicates)) as duplicates_estimate,
        sum(pause_s) as pause_s,
        sum(pause_upper_s) as pause_upper_s,
        sum(coalesce(pause_estimate_s, pause_s)) as pause_estimate_s,
        sum(case when source = 'broker' then duplicates else 0 end) as duplicates_from_broker,
        sum(case when source = 'broker' then duplicates_upper else 0 end) as duplicates_upper_from_broker,
        sum(case when source = 'broker' then pause_s else 0.0 end) as pause_from_broker_s,
        sum(case when source = 'broker' then pause_upper_s else 0.0 end) as pause_upper_from_broker_s,
        bool_or(source in ('agent', 'both')) as agent_saw,
        bool_or(source in ('broker', 'both')) as broker_saw
    from handoffs
    group by cluster_id, group_id
),

rebalances as (
    select
        cluster_id,
        group_id,
        count(*) as rebalances
    from episodes
    group by cluster_id, group_id
),

fleet as (
    select
        cluster_id,
        group_id
    from coverage
    union
    select
        cluster_id,
        group_id
    from costs
    union
    select
        cluster_id,
        group_id
    from rebalances
),

per_group as (
    select
        fleet.cluster_id,
        fleet.group_id,
        case
            when
                (coverage.covered_s > 0 or costs.agent_saw)
                and (coverage.broker_covered_s > 0 or costs.broker_saw)
                then 'both'
            when coverage.broker_covered_s > 0 or costs.broker_saw then 'broker'
            else 'agent'
        end as `source`,
        coalesce(rebalances.rebalances, 0) as rebalances,
        coalesce(costs.handoffs, 0) as handoffs,
        coalesce(costs.broker_handoffs, 0) as broker_handoffs,
        coalesce(costs.duplicates, 0) as duplicates,
        coalesce(costs.duplicates_upper, 0) as duplicates_upper,
        coalesce(costs.duplicates_estimate, 0) as duplicates_estimate,
        coalesce(costs.pause_s, 0.0) as pause_s,
        coalesce(costs.pause_upper_s, 0.0) as pause_upper_s,
        coalesce(costs.pause_estimate_s, 0.0) as pause_estimate_s,
        coalesce(costs.duplicates_from_broker, 0) as duplicates_from_broker,
        coalesce(costs.duplicates_upper_from_broker, 0) as duplicates_upper_from_broker,
        coalesce(costs.pause_from_broker_s, 0.0) as pause_from_broker_s,
        coalesce(costs.pause_upper_from_broker_s, 0.0) as pause_upper_from_broker_s,
        coverage.covered_s,
        coverage.broker_covered_s,
        coverage.owned_s,
        case when coverage.owned_s > 0 then coverage.covered_s / coverage.owned_s end as coverage,
        case when coverage.owned_s > 0 then coverage.broker_covered_s / coverage.owned_s end as broker_coverage
    from fleet
    left join coverage on fleet.cluster_id = coverage.cluster_id and fleet.group_id = coverage.group_id
    left join costs on fleet.cluster_id = costs.cluster_id and fleet.group_id = costs.group_id
    left join rebalances on fleet.cluster_id = rebalances.cluster_id and fleet.group_id = rebalances.group_id
)

select
    *,
    row_number() over (
        order by
            duplicates_estimate desc, pause_estimate_s desc, duplicates_upper desc, pause_upper_s desc,
            cluster_id asc, group_id asc
    ) as cost_rank,
    {{ built_through_batch() }} as built_through_batch
from per_group
