-- Grain: one row per closed-loop check of a recommendation: predicted against measured.
-- A table rebuilt whole each build, not an incremental mart: checks arrive without new
-- telemetry for their group (a rerun writes to its own group), and there are a handful.
{{ config(materialized='table', unique_key=['cluster_id', 'group_id', 'verified_at']) }}

with checks as (
    select * from {{ ref('stg_lens__verifications') }}
)

select * from checks
