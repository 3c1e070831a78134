-- Grain: one row per group and protocol phase: what the group's rebalances cost while its members
-- were all classic, mixed (a KIP-848 migration or its rollback under way), or all on the consumer
-- protocol; the mixed phase's cost beside the steady states before and after it. A handoff counts in
-- the phase in which its partition was released.
{{ config(unique_key=['cluster_id', 'group_id', 'started_at']) }}

with phases as (
    select * from {{ ref('stg_lens__protocol_phases') }}
    {{ only_changed() }}
),

handoffs as (
    select * from {{ ref('stg_lens__handoffs') }}
    {{ only_changed() }}
),

episodes as (
    select * from {{ ref('stg_lens__episodes') }}
    {{ only_changed() }}
),

moved as (
    select
        p.cluster_id,
        p.group_id,
        p.started_at,
        count(h.handoff_id) as partitions_moved,
        coalesce(sum(h.pause_s), 0.0) as pause_s,
        coalesce(sum(h.pause_upper_s), 0.0) as pause_upper_s,
        coalesce(sum(h.duplicates), 0) as duplicates,
        coalesce(sum(h.duplicates_upper), 0) as duplicates_upper
    from phases as p
    left join handoffs as h
        on
            p.cluster_id = h.cluster_id and p.group_id = h.group_id
            and p.started_at <= h.released_at and (p.ended_at is null or p.ended_at > h.released_at)
    group by p.cluster_id, p.group_id, p.started_at
),

rebalanced as (
    select
        p.cluster_id,
        p.group_id,
        p.started_at,
        count(e.episode_id) as rebalances
    from phases as p
    left join episodes as e
        on
            p.cluster_id = e.cluster_id and p.group_id = e.group_id
            and p.started_at <= e.started_at and (p.ended_at is null or p.ended_at > e.started_at)
    group by p.cluster_id, p.group_id, p.started_at
)

select
    p.cluster_id,
    p.group_id,
    p.phase,
    p.started_at,
    p.ended_at,
    p.duration_s,
    r.rebalances,
    m.partitions_moved,
    m.pause_s,
    m.pause_upper_s,
    m.duplicates,
    m.duplicates_upper,
    m.pause_s / nullif(m.partitions_moved, 0) as pause_per_handoff_s,
    {{ built_through_batch() }} as built_through_batch
from phases as p
inner join moved as m on p.cluster_id = m.cluster_id and p.group_id = m.group_id and p.started_at = m.started_at
inner join rebalanced as r on p.cluster_id = r.cluster_id and p.group_id = r.group_id and p.started_at = r.started_at
