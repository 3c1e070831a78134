-- Grain: one row per group and day, with the change from the group's previous day (the
-- trend a dashboard shows beside the figure).
{{ config(unique_key=['cluster_id', 'group_id', 'day']) }}

with metrics as (
    select * from {{ ref('stg_lens__metrics') }}
    {{ only_changed() }}
)

select
    cluster_id,
    group_id,
    cast(period_start as date) as `day`,
    rebalances,
    pause_s,
    pause_upper_s,
    duplicates,
    duplicates_upper,
    lost_partitions,
    records_processed,
    duplicate_rate,
    coverage,
    covered_s,
    owned_s,
    broker_covered_s,
    broker_coverage,
    commit_on_revoke_coverage,
    rebalances - lag(rebalances) over (partition by cluster_id, group_id order by period_start) as rebalances_change,
    duplicates - lag(duplicates) over (partition by cluster_id, group_id order by period_start) as duplicates_change,
    pause_s - lag(pause_s) over (partition by cluster_id, group_id order by period_start)
        as pause_change_s,
    {{ built_through_batch() }} as built_through_batch
from metrics
where grain = 'day' and cause = 'all'
