-- One row per closed-loop check: a recommendation rerun, its predicted saving beside the measured one.
with source as (
    select * from {{ source('lens', 'verifications') }}
)

select
    cluster_id,
    group_id,
    verified_at,
    scenario,
    kind,
    title,
    array_join(config_change, '\n') as config_change,
    predicted_duplicates_saved,
    measured_duplicates_saved,
    predicted_pause_saved_s,
    measured_pause_saved_s,
    measured_duplicates_before,
    measured_duplicates_after,
    measured_pause_before_s,
    measured_pause_after_s,
    holds,
    rerun_group_id,
    predicted_duplicates_mixed_phase,
    measured_duplicates_mixed_phase,
    predicted_pause_mixed_phase_s,
    measured_pause_mixed_phase_s,
    coalesce(reruns, 1) as reruns,
    measured_duplicates_saved_se,
    measured_pause_saved_se_s
from source
