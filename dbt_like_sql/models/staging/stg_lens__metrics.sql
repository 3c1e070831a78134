-- Gold's additive figures per group, grain (hour, day), period and cause ('all' included).
with source as (
    select * from {{ source('lens', 'metrics') }}
)

select
    cluster_id,
    group_id,
    grain,
    period_start,
    cause,
    rebalances,
    partitions_moved,
    pause_s,
    pause_upper_s,
    duplicates,
    duplicates_upper,
    lost_partitions,
    commit_on_revoke_coverage,
    revoke_callback_s,
    records_processed,
    duplicate_rate,
    covered_s,
    owned_s,
    coverage,
    broker_covered_s,
    broker_coverage
from source
