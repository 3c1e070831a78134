-- Grain: one row per group and hour (the hour an episode started). Incremental: a build
-- recomputes only the groups with events validated since the last one and replaces their rows.
{{ config(unique_key=['cluster_id', 'group_id', 'period_start']) }}

with metrics as (
    select * from {{ ref('stg_lens__metrics') }}
    {{ only_changed() }}
)

select
    cluster_id,
    group_id,
    period_start,
    rebalances,
    partitions_moved,
    pause_s,
    pause_upper_s,
    duplicates,
    duplicates_upper,
    lost_partitions,
    records_processed,
    duplicate_rate,
    coverage,
    {{ built_through_batch() }} as built_through_batch
from metrics
where grain = 'hour' and cause = 'all'
