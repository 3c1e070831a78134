-- Grain: one row per group and recommendation that asks for something (a change or a
-- warning; the healthy verdict left out), in the recommend stage's rank order.
with recommendations as (
    select * from {{ ref('stg_lens__recommendations') }}
)

select *
from recommendations
where kind != 'healthy'
