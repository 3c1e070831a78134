"""Which ``member_states`` state each thing the agent observes leads to, per group protocol.

librdkafka shows Python only subscribe, the rebalance callbacks, poll errors and close;
this module maps those observations onto the tables in ``member_states`` so the agent
never hard-codes state names in its logic.
"""
from __future__ import annotations

from dataclasses import dataclass

from consumer_agent.member_states import ClassicState as K
from consumer_agent.member_states import ConsumerProtocolState as C


@dataclass(frozen=True)
class Lifecycle:
    """State paths (entered in order) for each observation."""

    subscribed: tuple[str, ...]
    in_assign: tuple[str, ...]
    in_revoke: tuple[str, ...]
    after_revoke: tuple[str, ...]
    in_lost: tuple[str, ...]
    after_lost: tuple[str, ...]
    stable: tuple[str, ...]
    stale: tuple[str, ...]
    fenced: tuple[str, ...]
    leave_start: tuple[str, ...]
    leave_after_revoke: tuple[str, ...]
    left: tuple[str, ...]
    rejoin_from: frozenset[str]       # states from which a new assignment means the member joined again


LIFECYCLES: dict[str, Lifecycle] = {
    "classic": Lifecycle(
        subscribed=(K.JOINING,), in_assign=(K.ASSIGNING,), in_revoke=(K.REVOKING,), after_revoke=(K.JOINING,),
        in_lost=(K.LOST,), after_lost=(K.JOINING,), stable=(K.STABLE,), stale=(K.STALE,), fenced=(K.LOST,),
        leave_start=(K.LEAVING,), leave_after_revoke=(K.LEAVING,), left=(K.UNSUBSCRIBED,),
        rejoin_from=frozenset({K.UNSUBSCRIBED, K.STALE, K.LOST})),
    # KIP-848: the Java client's path for an expired poll timer is leave, then STALE (MemberState.java).
    "consumer": Lifecycle(
        subscribed=(C.JOINING,), in_assign=(C.RECONCILING,), in_revoke=(C.RECONCILING,), after_revoke=(C.STABLE,),
        in_lost=(C.FENCED,), after_lost=(C.JOINING,), stable=(C.STABLE,),
        stale=(C.PREPARE_LEAVING, C.LEAVING, C.STALE), fenced=(C.FENCED,),
        leave_start=(C.PREPARE_LEAVING,), leave_after_revoke=(C.PREPARE_LEAVING,), left=(C.LEAVING, C.UNSUBSCRIBED),
        rejoin_from=frozenset({C.STALE, C.FENCED, C.UNSUBSCRIBED})),
}
