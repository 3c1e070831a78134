-- Grain: one row per member process (agent) of a group: the handoffs it caused by letting
-- partitions go, and what they cost; rank 1 is the group's costliest member.
{{ config(unique_key=['cluster_id', 'group_id', 'agent_id']) }}

with handoffs as (
    select * from {{ ref('int_handoffs_with_owners') }}
    {{ only_changed() }}
),

per_member as (
    select
        cluster_id,
        group_id,
        prev_agent_id as agent_id,
        max(prev_client_id) as client_id,
        max(prev_host) as host,
        count(*) as handoffs,
        sum(case when release_kind != 'revoked' then 1 else 0 end) as lost_partitions,
        sum(duplicates) as duplicates,
        sum(duplicates_upper) as duplicates_upper,
        sum(pause_s) as pause_s,
        sum(pause_upper_s) as pause_upper_s
    from handoffs
    -- a partition let go by a member without the agent (unseen_owner) has no member to rank
    where cause != 'start' and prev_agent_id is not null
    group by cluster_id, group_id, prev_agent_id
)

select
    *,
    row_number() over (partition by cluster_id, group_id order by duplicates desc, pause_s desc, agent_id asc)
        as cost_rank,
    {{ built_through_batch() }} as built_through_batch
from per_member
