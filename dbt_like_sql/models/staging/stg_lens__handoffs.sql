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
    -- an unknown upper bound (an unknown figure; a broker pause whose next owner has not committed yet: still
    -- open) counts the point figure: a sum of upper bounds is never below the sum of what surely happened
    coalesce(pause_upper_s, {{ point_figure('pause_s', '0.0') }}) as pause_upper_s,
    {{ point_figure('duplicates', '0') }} as duplicates,
    coalesce(duplicates_upper, {{ point_figure('duplicates', '0') }}) as duplicates_upper,
    -- the most likely figure (an estimate, not a bound) and its interval; null: nothing to estimate from
    duplicates_estimate,
    duplicates_estimate_low,
    duplicates_estimate_high,
    pause_estimate_s,
    pause_estimate_low_s,
    pause_estimate_high_s,
    -- where the figures came from (agent, broker, both) and how sure the cause is (exact, probable)
    source,
    cause_confidence,
    -- the previous owner's stop window in the broker's log (null: the agent's handoff alone)
    timestamp_millis(stopped_after_ms) as stopped_after_at,
    timestamp_millis(stopped_by_ms) as stopped_by_at
from source
