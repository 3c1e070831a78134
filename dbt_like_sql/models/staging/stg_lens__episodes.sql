-- One row per rebalance episode of a group.
with source as (
    select * from {{ source('lens', 'episodes') }}
)

select
    episode_id,
    cluster_id,
    group_id,
    timestamp_millis(start_ms) as started_at,
    timestamp_millis(end_ms) as ended_at,
    duration_s,
    cause,
    array_join(causes, ', ') as causes,
    size(members) as members,
    size(members_joined) as members_joined,
    size(members_left) as members_left,
    partitions_moved,
    partitions_lost,
    join_s,
    callbacks_s,
    reconcile_s,
    slowest_agent_id,
    join_group_s,
    leader_assign_s,
    sync_group_s,
    phase_source,
    source
from source
