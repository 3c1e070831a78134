-- Grain: one row per group and figure: the broker's bounds checked against the agent's exact figures on the
-- handoffs both saw (a data-quality mart: a disagreement is counted, never hidden). A table rebuilt whole each
-- build, as fleet_group_costs is: the broker's side of a check can land without new telemetry.
{{ config(materialized='table', unique_key=['cluster_id', 'group_id', 'figure']) }}

with agreement as (
    select * from {{ ref('stg_lens__source_agreement') }}
)

select
    *,
    case when handoffs > 0 then outside / handoffs end as outside_share,
    {{ built_through_batch() }} as built_through_batch
from agreement
