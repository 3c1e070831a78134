-- One row per group and protocol phase (gold/protocol_phases): classic, consumer (KIP-848), or
-- mixed while members move between them one at a time. An open span (ended_at null) goes on.
with source as (
    select * from {{ source('lens', 'protocol_phases') }}
)

select
    cluster_id,
    group_id,
    phase,
    timestamp_millis(start_ms) as started_at,
    timestamp_millis(end_ms) as ended_at,
    (end_ms - start_ms) / 1000.0 as duration_s
from source
