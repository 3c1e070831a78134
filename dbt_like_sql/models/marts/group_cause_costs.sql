-- Grain: one row per group and cause (what made the previous owners let go): what each
-- cause cost over the group's whole window.
{{ config(unique_key=['cluster_id', 'group_id', 'cause']) }}

with metrics as (
    select * from {{ ref('stg_lens__metrics') }}
    {{ only_changed() }}
)

select
    cluster_id,
    group_id,
    cause,
    sum(rebalances) as rebalances,
    sum(partitions_moved) as partitions_moved,
    sum(pause_s) as pause_s,
    sum(pause_upper_s) as pause_upper_s,
    sum(duplicates) as duplicates,
    sum(duplicates_upper) as duplicates_upper,
    sum(lost_partitions) as lost_partitions,
    {{ built_through_batch() }} as built_through_batch
from metrics
where grain = 'day' and cause != 'all'
group by cluster_id, group_id, cause
