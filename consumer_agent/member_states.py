"""The group member's states and allowed transitions, one table per group protocol.

KIP-848 (``group.protocol=consumer``) follows the Java client's ``MemberState``
(apache/kafka clients/.../consumer/internals/MemberState.java): each state lists the
states it may be entered from. The classic protocol follows librdkafka's join
states as an application sees them (join, sync, then the assign or revoke call).

librdkafka exposes none of these states to Python: the agent infers them from what
it does see (subscribe, the rebalance callbacks, errors such as
``_MAX_POLL_EXCEEDED`` or fencing, close). A transition the table does not allow is
still reported (the member's real life wins over our model) and flagged, so a gap
in the model shows up in telemetry instead of being hidden.
"""
from __future__ import annotations

from enum import Enum


class ConsumerProtocolState(str, Enum):
    """KIP-848 member states (names as in the Java client, lower case)."""

    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    FENCED = "fenced"
    PREPARE_LEAVING = "prepare_leaving"
    LEAVING = "leaving"
    STALE = "stale"
    FATAL = "fatal"


class ClassicState(str, Enum):
    """Classic-protocol phases as the application sees them."""

    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"          # JoinGroup/SyncGroup in flight (librdkafka wait-join .. wait-sync)
    ASSIGNING = "assigning"      # the assign callback runs (wait-assign-call)
    REVOKING = "revoking"        # the revoke callback runs (wait-unassign-call)
    STABLE = "stable"            # steady
    LOST = "lost"                # assignment lost (session timeout, fenced); on_lost runs
    STALE = "stale"              # max.poll.interval.ms exceeded: left the group, rejoins on next poll
    LEAVING = "leaving"          # close()/unsubscribe(): final revoke, LeaveGroup
    FATAL = "fatal"


_C = ConsumerProtocolState
# state -> the states it may be entered from (MemberState.java's "previous states").
CONSUMER_PROTOCOL_TRANSITIONS: dict[ConsumerProtocolState, frozenset[ConsumerProtocolState]] = {
    _C.UNSUBSCRIBED: frozenset({_C.PREPARE_LEAVING, _C.LEAVING, _C.FENCED}),
    _C.JOINING: frozenset({_C.FENCED, _C.UNSUBSCRIBED, _C.STALE}),
    _C.RECONCILING: frozenset({_C.STABLE, _C.JOINING, _C.ACKNOWLEDGING, _C.RECONCILING}),
    _C.ACKNOWLEDGING: frozenset({_C.RECONCILING}),
    _C.STABLE: frozenset({_C.JOINING, _C.ACKNOWLEDGING, _C.RECONCILING}),
    _C.FENCED: frozenset({_C.JOINING, _C.STABLE, _C.RECONCILING, _C.ACKNOWLEDGING, _C.PREPARE_LEAVING, _C.LEAVING}),
    _C.PREPARE_LEAVING: frozenset({_C.JOINING, _C.STABLE, _C.RECONCILING, _C.ACKNOWLEDGING, _C.UNSUBSCRIBED}),
    _C.LEAVING: frozenset({_C.PREPARE_LEAVING}),
    _C.STALE: frozenset({_C.LEAVING}),
    _C.FATAL: frozenset({_C.JOINING, _C.STABLE, _C.RECONCILING, _C.ACKNOWLEDGING, _C.PREPARE_LEAVING, _C.LEAVING,
                         _C.UNSUBSCRIBED}),
}

_K = ClassicState
CLASSIC_TRANSITIONS: dict[ClassicState, frozenset[ClassicState]] = {
    _K.UNSUBSCRIBED: frozenset({_K.LEAVING, _K.JOINING, _K.STABLE}),
    _K.JOINING: frozenset({_K.UNSUBSCRIBED, _K.STABLE, _K.REVOKING, _K.LOST, _K.STALE, _K.ASSIGNING}),
    _K.ASSIGNING: frozenset({_K.JOINING, _K.STABLE}),
    _K.REVOKING: frozenset({_K.STABLE, _K.JOINING, _K.LEAVING}),
    _K.STABLE: frozenset({_K.ASSIGNING, _K.REVOKING, _K.JOINING}),
    _K.LOST: frozenset({_K.STABLE, _K.JOINING, _K.ASSIGNING, _K.REVOKING, _K.STALE}),
    _K.STALE: frozenset({_K.STABLE, _K.JOINING, _K.ASSIGNING}),
    _K.LEAVING: frozenset({_K.STABLE, _K.JOINING, _K.ASSIGNING, _K.REVOKING, _K.LOST, _K.STALE, _K.UNSUBSCRIBED}),
    _K.FATAL: frozenset(set(_K) - {_K.FATAL}),
}

TABLES = {"consumer": CONSUMER_PROTOCOL_TRANSITIONS, "classic": CLASSIC_TRANSITIONS}
STATE_ENUMS = {"consumer": ConsumerProtocolState, "classic": ClassicState}


def is_allowed(group_protocol: str, from_state: str, to_state: str) -> bool:
    """Whether the table for ``group_protocol`` allows ``from_state -> to_state``."""
    states = STATE_ENUMS[group_protocol]
    try:
        return states(from_state) in TABLES[group_protocol][states(to_state)]
    except ValueError:
        return False
