-- Grain: one row per group and recommendation that asks for something (a change or a
-- warning; the healthy verdict left out), in the recommend stage's rank order.
{{ config(unique_key=['cluster_id', 'group_id', 'rank']) }}

with recommendations as (
    select * from {{ ref('stg_lens__recommendations') }}
    {{ only_changed() }}
)

select
    *,
    {{ built_through_batch() }} as built_through_batch
from recommendations
where kind != 'healthy'
