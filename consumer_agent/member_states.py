"""The group member's states and allowed transitions, one table per group protocol, from the agent spec.

KIP-848 (``group.protocol=consumer``) follows the Java client's ``MemberState``
(apache/kafka clients/.../consumer/internals/MemberState.java): each state lists the
states it may be entered from. The classic protocol follows librdkafka's join
states as an application sees them (join, sync, then the assign or revoke call).
The tables are declared once, in ``agent-spec-v1.json`` (``member_states``), which the Java
agent reads too.

librdkafka exposes none of these states to Python: the agent infers them from what
it does see (subscribe, the rebalance callbacks, errors such as
``_MAX_POLL_EXCEEDED`` or fencing, close). A transition the table does not allow is
still reported (the member's real life wins over our model) and flagged, so a gap
in the model shows up in telemetry instead of being hidden.
"""
from __future__ import annotations

from enum import Enum

from consumer_agent.agent_spec import spec

_TABLES = spec()["member_states"]


def _states(name: str, protocol: str) -> type[Enum]:
    """The protocol's states as a ``str`` enum: member ``JOINING`` is ``"joining"``."""
    return Enum(name, {state.upper(): state for state in _TABLES[protocol]["states"]}, type=str, module=__name__)


# KIP-848 member states (names as in the Java client, lower case).
ConsumerProtocolState = _states("ConsumerProtocolState", "consumer")
# Classic-protocol phases as the application sees them.
ClassicState = _states("ClassicState", "classic")
STATE_ENUMS = {"consumer": ConsumerProtocolState, "classic": ClassicState}


def _transitions(protocol: str) -> dict[Enum, frozenset[Enum]]:
    """state -> the states it may be entered from."""
    states = STATE_ENUMS[protocol]
    return {states(state): frozenset(states(previous) for previous in entry["entered_from"])
            for state, entry in _TABLES[protocol]["states"].items()}


CONSUMER_PROTOCOL_TRANSITIONS = _transitions("consumer")
CLASSIC_TRANSITIONS = _transitions("classic")
TABLES = {"consumer": CONSUMER_PROTOCOL_TRANSITIONS, "classic": CLASSIC_TRANSITIONS}


def is_allowed(group_protocol: str, from_state: str, to_state: str) -> bool:
    """Whether the table for ``group_protocol`` allows ``from_state -> to_state``."""
    states = STATE_ENUMS[group_protocol]
    try:
        return states(from_state) in TABLES[group_protocol][states(to_state)]
    except ValueError:
        return False
