-- One row per group and candidate configuration, as the recommend stage priced it.
with source as (
    select * from {{ source('lens', 'what_if') }}
)

select
    group_id,
    config,
    is_current,
    group_protocol,
    assignor,
    static_membership,
    commit_on_revoke,
    session_timeout_ms,
    max_poll_interval_ms,
    rebalances as predicted_rebalances,
    handoffs as predicted_handoffs,
    partitions_moved as predicted_partitions_moved,
    duplicates as predicted_duplicates,
    pause_s as predicted_paused_partition_s,
    duplicates_saved,
    pause_saved_s as paused_partition_s_saved,
    measured_duplicates,
    measured_pause_s as measured_paused_partition_s
from source
