-- Grain: one row per group and day: the share of graceful handoffs committed inside the
-- revoke (gold), beside the share of the group's member processes that enable it.
with daily as (
    select * from {{ ref('stg_lens__metrics') }}
    where grain = 'day' and cause = 'all'
),

members as (
    select
        group_id,
        count(*) as member_processes,
        avg(case when commit_on_revoke then 1.0 else 0.0 end) as members_enabled_share
    from {{ ref('stg_lens__members') }}
    group by group_id
)

select
    daily.group_id,
    cast(daily.period_start as date) as `day`,
    daily.commit_on_revoke_coverage,
    members.member_processes,
    members.members_enabled_share
from daily
left join members on daily.group_id = members.group_id
