-- Grain: one row per partition handoff of an episode, with both owners named: the ownership
-- chart of the report (who held the partition, the pause between them).
{{ config(unique_key='handoff_id') }}

with handoffs as (
    select * from {{ ref('int_handoffs_with_owners') }}
    {{ only_changed() }}
),

members as (
    select * from {{ ref('stg_lens__members') }}
    {{ only_changed() }}
)

select
    handoffs.handoff_id,
    handoffs.cluster_id,
    handoffs.group_id,
    handoffs.episode_id,
    handoffs.topic,
    handoffs.`partition`,
    handoffs.cause,
    handoffs.release_kind,
    handoffs.prev_agent_id,
    handoffs.prev_client_id,
    handoffs.next_agent_id,
    next_members.client_id as next_client_id,
    handoffs.released_at,
    timestamp_millis(unix_millis(handoffs.released_at) + cast(handoffs.pause_s * 1000 as bigint)) as resumed_at,
    handoffs.pause_s,
    handoffs.pause_upper_s,
    handoffs.duplicates,
    handoffs.duplicates_upper,
    handoffs.duplicates_estimate,
    handoffs.duplicates_estimate_low,
    handoffs.duplicates_estimate_high,
    handoffs.pause_estimate_s,
    handoffs.pause_estimate_low_s,
    handoffs.pause_estimate_high_s,
    handoffs.source,
    handoffs.cause_confidence,
    handoffs.stopped_after_at,
    handoffs.stopped_by_at,
    {{ built_through_batch() }} as built_through_batch
from handoffs
left join members as next_members
    on
        handoffs.cluster_id = next_members.cluster_id
        and handoffs.group_id = next_members.group_id
        and handoffs.next_agent_id = next_members.agent_id
where handoffs.episode_id is not null
