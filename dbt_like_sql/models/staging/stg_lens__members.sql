-- One row per member process (agent) with the configuration it reported.
with source as (
    select * from {{ source('lens', 'members') }}
)

select
    cluster_id,
    group_id,
    agent_id,
    member_id,
    group_instance_id,
    host,
    client_id,
    group_protocol,
    coalesce(remote_assignor, assignor) as assignor,
    coalesce(commit_on_revoke, false) as commit_on_revoke,
    group_instance_id is not null as is_static,
    session_timeout_ms,
    max_poll_interval_ms,
    timestamp_millis(joined_ms) as joined_at,
    join_cause,
    timestamp_millis(left_ms) as left_at,
    leave_cause,
    crashed,
    size(stalls) as stalls
from source
