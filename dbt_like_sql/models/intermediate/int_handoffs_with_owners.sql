-- One row per handoff with the process that let the partition go: its host, client id and
-- configuration (what the member and host marts rank).
with handoffs as (
    select * from {{ ref('stg_lens__handoffs') }}
),

members as (
    select * from {{ ref('stg_lens__members') }}
)

select
    handoffs.*,
    members.host as prev_host,
    members.client_id as prev_client_id,
    members.assignor as prev_assignor,
    members.is_static as prev_is_static,
    members.commit_on_revoke as prev_commit_on_revoke
from handoffs
left join members
    on
        handoffs.cluster_id = members.cluster_id
        and handoffs.group_id = members.group_id
        and handoffs.prev_agent_id = members.agent_id
