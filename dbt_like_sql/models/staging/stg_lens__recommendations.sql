-- One row per group and recommendation (a change, a warning or the healthy verdict), ranked.
with source as (
    select * from {{ source('lens', 'recommendations') }}
)

select
    cluster_id,
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
    predicted_duplicates_before,
    predicted_duplicates_after,
    predicted_duplicates_saved,
    predicted_duplicates_saved_pct,
    predicted_pause_before_s,
    predicted_pause_after_s,
    predicted_pause_saved_s,
    predicted_pause_saved_pct,
    tradeoff,
    confidence,
    confidence_reason,
    predicted_duplicates_mixed_phase,
    predicted_pause_mixed_phase_s,
    measured_duplicates,
    measured_pause_s,
    replayed_duplicates,
    replayed_pause_s,
    replayed_duplicates_error_pct,
    replayed_pause_error_pct,
    source
from source
