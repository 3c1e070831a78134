-- One row per partition handoff: the gold row with times as timestamps and the figures
-- the marts sum (macros/point_figure.sql: exact, else the lower bound; 0 where gold has none).
with source as (
    select * from {{ source('lens', 'handoffs') }}
)

select
    handoff_id,
    cluster_id,
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
    coalesce(unseen_owner, false) as unseen_owner,
    {{ point_figure('pause_s', '0.0') }} as pause_s,
    -- an upper bound is unknown only where its figure is: both count 0
    coalesce(pause_upper_s, 0.0) as pause_upper_s,
    {{ point_figure('duplicates', '0') }} as duplicates,
    coalesce(duplicates_upper, 0) as duplicates_upper,
    -- the most likely figure (an estimate, not a bound) and its interval; null: nothing to estimate from
    duplicates_estimate,
    duplicates_estimate_low,
    duplicates_estimate_high,
    pause_estimate_s,
    pause_estimate_low_s,
    pause_estimate_high_s
from source
