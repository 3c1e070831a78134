-- Grain: one row per arrival day and rule: how many telemetry records validation rejected.
with quarantine as (
    select * from {{ ref('stg_lens__quarantine') }}
)

select
    arrival_date,
    reason,
    count(*) as records
from quarantine
group by arrival_date, reason
