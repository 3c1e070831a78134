-- Grain: one row per group and day: the share of graceful handoffs committed inside the
-- revoke (gold), beside the share of the group's member processes that enable it.
{{ config(unique_key=['cluster_id', 'group_id', 'day']) }}

with metrics as (
    select * from {{ ref('stg_lens__metrics') }}
    {{ only_changed() }}
),

members as (
    select * from {{ ref('stg_lens__members') }}
    {{ only_changed() }}
),

daily as (
    select * from metrics
    where grain = 'day' and cause = 'all'
),

coverage as (
    select
        cluster_id,
        group_id,
        count(*) as member_processes,
        avg(case when commit_on_revoke then 1.0 else 0.0 end) as members_enabled_share
    from members
    group by cluster_id, group_id
)

select
    daily.cluster_id,
    daily.group_id,
    cast(daily.period_start as date) as `day`,
    daily.commit_on_revoke_coverage,
    coverage.member_processes,
    coverage.members_enabled_share,
    {{ built_through_batch() }} as built_through_batch
from daily
left join coverage on daily.cluster_id = coverage.cluster_id and daily.group_id = coverage.group_id
