-- Gold's additive figures per group, grain (hour, day), period and cause ('all' included).
with source as (
    select * from {{ source('lens', 'metrics') }}
)

select
    group_id,
    grain,
    period_start,
    cause,
    rebalances,
    partitions_moved,
    partition_seconds_unavailable as paused_partition_s,
    partition_seconds_unavailable_upper as paused_partition_s_upper,
    duplicates,
    duplicates_upper,
    lost_partitions,
    commit_on_revoke_coverage,
    revoke_callback_s,
    records_processed,
    duplicate_rate
from source
