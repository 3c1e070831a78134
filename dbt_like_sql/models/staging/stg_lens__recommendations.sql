-- One row per group and recommendation (a change, a warning or the healthy verdict), ranked.
with source as (
    select * from {{ source('lens', 'recommendations') }}
)

select
    group_id,
    `rank`,
    kind,
    title,
    current_config,
    recommended_config,
    array_join(config_change, '\n') as config_change,
    array_join(rollout, '\n') as rollout,
    array_join(evidence, '\n') as evidence,
    evidence_query,
    duplicates_before,
    duplicates_after,
    duplicates_saved,
    duplicates_saved_pct,
    pause_before_s as paused_partition_s_before,
    pause_after_s as paused_partition_s_after,
    pause_saved_s as paused_partition_s_saved,
    pause_saved_pct as paused_partition_s_saved_pct,
    tradeoff,
    confidence,
    confidence_reason
from source
