-- One row per partition handoff: the gold row with times as timestamps and the figures
-- the marts sum (duplicates: confirmed, else the lower bound, as gold/metrics counts them).
with source as (
    select * from {{ source('lens', 'handoffs') }}
)

select
    handoff_id,
    group_id,
    topic,
    `partition`,
    prev_agent_id,
    next_agent_id,
    same_owner,
    release_kind,
    cause,
    episode_id,
    timestamp_millis(coalesce(revoke_ms, assigned_ms)) as released_at,
    timestamp_millis(episode_start_ms) as episode_started_at,
    commit_in_revoke,
    coalesce(unavailable_s, 0.0) as paused_s,
    coalesce(unavailable_upper_s, unavailable_s, 0.0) as paused_upper_s,
    coalesce(duplicates_confirmed, duplicates_lower, 0) as duplicates,
    coalesce(duplicates_confirmed, duplicates_upper, 0) as duplicates_upper
from source
