-- One row per closed-loop check: a recommendation rerun, its predicted saving beside the measured one.
with source as (
    select * from {{ source('lens', 'verifications') }}
)

select
    group_id,
    verified_at,
    scenario,
    kind,
    title,
    array_join(config_change, '\n') as config_change,
    predicted_duplicates_saved,
    measured_duplicates_saved,
    predicted_pause_saved_s as predicted_paused_partition_s_saved,
    measured_pause_saved_s as measured_paused_partition_s_saved,
    duplicates_before,
    duplicates_after,
    pause_before_s as paused_partition_s_before,
    pause_after_s as paused_partition_s_after,
    holds,
    rerun_group_id
from source
