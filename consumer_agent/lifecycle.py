"""Which ``member_states`` state each thing the agent observes leads to, per group protocol, from the agent spec.

librdkafka shows Python only subscribe, the rebalance callbacks, poll errors and close;
the spec's ``lifecycle`` maps those observations onto the tables in ``member_states`` (and names
the reason each transition carries), so neither agent hard-codes state names in its logic.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from consumer_agent.agent_spec import PROTOCOLS, spec

_LIFECYCLE = spec()["lifecycle"]


@dataclass(frozen=True)
class Lifecycle:
    """State paths (entered in order) for each observation (the spec's ``lifecycle.paths``)."""

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


def _lifecycle(protocol: str) -> Lifecycle:
    paths = {f.name: tuple(_LIFECYCLE["paths"][f.name][protocol]) for f in fields(Lifecycle) if f.name != "rejoin_from"}
    return Lifecycle(**paths, rejoin_from=frozenset(_LIFECYCLE["rejoin_from"][protocol]))


LIFECYCLES: dict[str, Lifecycle] = {protocol: _lifecycle(protocol) for protocol in PROTOCOLS}
# The state_transition reasons, by the spec's name for them ("fenced" is followed by the error's name).
REASONS: dict[str, str] = dict(_LIFECYCLE["reasons"])
