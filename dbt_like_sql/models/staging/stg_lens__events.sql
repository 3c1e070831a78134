-- The envelope of every validated event: enough for per-agent data quality and for the
-- incremental marts' "which groups changed since the last build".
with source as (
    select * from {{ source('lens', 'events') }}
)

select
    event_id,
    kind,
    cluster_id,
    group_id,
    agent_id,
    host,
    client_id,
    seq,
    timestamp_millis(event_time_ms) as event_at,
    validate_batch,
    agent_health.dropped_total as telemetry_dropped_total,
    agent_health.emitter_errors_total
from source
