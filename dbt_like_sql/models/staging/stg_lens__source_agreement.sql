-- One row per group and figure: the handoffs the agent and the broker both saw, and how many of the agent's
-- exact figures fell outside the broker's bounds.
with source as (
    select * from {{ source('lens', 'source_agreement') }}
)

select
    cluster_id,
    group_id,
    figure,
    handoffs,
    outside,
    most_outside
from source
