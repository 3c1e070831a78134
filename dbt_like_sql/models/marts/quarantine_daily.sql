-- Grain: one row per arrival day and rule: how many telemetry records validation rejected.
-- Incremental: only the arrival days with newly quarantined records are recounted.
{{ config(unique_key=['arrival_date', 'reason'], replace_scope={'column': 'arrival_date'}) }}

with quarantine as (
    select * from {{ ref('stg_lens__quarantine') }}
    {{ only_changed('arrival_date') }}
)

select
    arrival_date,
    reason,
    count(*) as records,
    {{ built_through_batch() }} as built_through_batch
from quarantine
group by arrival_date, reason
