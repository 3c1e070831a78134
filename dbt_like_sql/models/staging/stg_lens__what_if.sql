-- One row per group and candidate configuration, as the recommend stage priced it.
with source as (
    select * from {{ source('lens', 'what_if') }}
)

select
    cluster_id,
    group_id,
    config,
    is_current,
    group_protocol,
    assignor,
    static_membership,
    commit_on_revoke,
    session_timeout_ms,
    max_poll_interval_ms,
    predicted_rebalances,
    predicted_handoffs,
    predicted_partitions_moved,
    predicted_duplicates,
    predicted_pause_s,
    predicted_duplicates_saved,
    predicted_pause_saved_s,
    measured_duplicates,
    measured_pause_s,
    replayed_duplicates,
    replayed_pause_s
from source
