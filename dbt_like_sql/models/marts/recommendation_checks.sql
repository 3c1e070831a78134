-- Grain: one row per closed-loop check of a recommendation: predicted against measured.
-- Rebuilt whole whenever checks were added (no scope): they arrive without new telemetry for
-- their group (a rerun writes to its own group), and there are a handful.
{{ config(replace_scope=none, unique_key=['cluster_id', 'group_id', 'verified_at']) }}

with checks as (
    select * from {{ ref('stg_lens__verifications') }}
)

select * from checks
