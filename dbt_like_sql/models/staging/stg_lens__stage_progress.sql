-- The last validation batch each pipeline stage has processed.
with source as (
    select * from {{ source('lens', 'stage_progress') }}
)

select
    stage,
    last_batch
from source
