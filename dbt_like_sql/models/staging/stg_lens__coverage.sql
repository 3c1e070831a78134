-- One row per group and hour: the partition-seconds its members held, seen exactly by the agent and seen by
-- the broker's log (every hour a member held a partition, rebalance or not).
with source as (
    select * from {{ source('lens', 'coverage') }}
)

select
    cluster_id,
    group_id,
    hour_start,
    covered_s,
    owned_s,
    broker_covered_s
from source
