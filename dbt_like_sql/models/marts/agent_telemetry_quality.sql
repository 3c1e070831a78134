-- Grain: one row per agent (member process): events received, sequence numbers missing
-- (telemetry lost on the way) and events the agent itself reported dropping. Incremental:
-- only the agents of groups with new events are recomputed.
{{ config(unique_key='agent_id') }}

with events as (
    select * from {{ ref('stg_lens__events') }}
    {{ only_changed() }}
)

select
    agent_id,
    max(cluster_id) as cluster_id,
    max(group_id) as group_id,
    max(host) as host,
    max(client_id) as client_id,
    count(*) as events,
    -- an agent numbers its events from 0: numbers before its first one received are missing too
    -- (a telemetry outage from the agent's start drops its oldest events)
    max(seq) + 1 - count(distinct seq) as sequence_gaps,
    coalesce(max(telemetry_dropped_total), 0) as telemetry_dropped,
    coalesce(max(emitter_errors_total), 0) as emitter_errors,
    max(event_at) as last_event_at,
    {{ built_through_batch() }} as built_through_batch
from events
group by agent_id
