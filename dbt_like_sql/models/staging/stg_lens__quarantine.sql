-- One row per rejected telemetry record and rule it failed (a record failing two rules is two rows).
with source as (
    select * from {{ source('lens', 'quarantine') }}
)

select
    topic,
    kafka_partition,
    kafka_offset,
    kafka_timestamp,
    `date` as arrival_date,
    validate_batch,
    reason
from source
    lateral view explode(reasons) r as reason
