"""Where an episode's rebalance time went: join and sync, the application's callbacks, KIP-848's
reconciliation (``pipelines.vocabulary.REBALANCE_PHASES``), from what the agents already send.

Each member's events in the episode are walked in order, its time cut into disjoint spans:
a ``state_transition`` puts the member in the phase its new state belongs to (none for the
others), and a ``partitions_*`` event's ``callback_ms`` is the callbacks' span ending at the
event (the callback's start is never before the member's last accounted moment nor the
episode's start). A span is counted only when both its ends are events of the episode, so a
member's phases never add up to more than the episode's duration. An assign callback also ends
a join its agent reported no move out of (an agent that reports only ``joining``, and the
synthetic fleets). The episode's figures are its slowest member's, the one whose phases add up
to most: the member the group waited for, so the three stack into one member's timeline.

The precision is the agent's: states come from what its client shows it. The Python agent
infers them at poll granularity (librdkafka shows Python no join states; a callback runs inside
``poll``), so ``join_s`` ends when the poll that runs the assign callback does, and KIP-848's
reconciliation is the agent's own work around the callbacks; the Java agent infers them from its
listener calls on the polling thread the same way today.
Pure: Spark's Python workers import it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from consumer_agent.contract import JOINING_STATE
from pipelines.gold.causes import Bodies
from pipelines.vocabulary import REBALANCE_PHASE_NAMES, REBALANCE_PHASES

CALLBACK_KINDS = frozenset({"partitions_assigned", "partitions_revoked", "partitions_lost"})
PHASE_OF_STATE = {state: p.name for p in REBALANCE_PHASES for state in p.states}
CALLBACKS = next(p.name for p in REBALANCE_PHASES if not p.states)
JOIN = PHASE_OF_STATE[JOINING_STATE]
SLOWEST = "slowest_agent_id"  # the gold/episodes column naming whose phases they are


@dataclass
class _Walk:
    """One member's time in an episode so far: the moment accounted up to, its phase since then,
    and the milliseconds each phase took (a phase it never showed is absent)."""

    at_ms: float | None = None
    phase: str | None = None
    spent: dict[str, float] = field(default_factory=dict)

    def count(self, phase: str | None, until_ms: float) -> None:
        """``phase`` took the time from the last accounted moment to ``until_ms`` (if both are seen)."""
        if phase is not None and self.at_ms is not None:
            self.spent[phase] = self.spent.get(phase, 0.0) + max(0.0, until_ms - self.at_ms)
        self.at_ms = until_ms if self.at_ms is None else max(self.at_ms, until_ms)


def member_phases(bodies: Bodies) -> dict[str, dict[str, float]]:
    """agent_id -> phase -> milliseconds, over one episode's events with their bodies (in time order)."""
    if not bodies:
        return {}
    start = bodies[0][0]["event_time_ms"]
    walks: dict[str, _Walk] = {}
    for e, b in bodies:
        walk = walks.setdefault(e["agent_id"], _Walk())
        t = e["event_time_ms"]
        if e["kind"] == "state_transition":
            walk.count(walk.phase, t)
            walk.phase = PHASE_OF_STATE.get(b["to_state"])
        elif e["kind"] in CALLBACK_KINDS:
            begun = max(t - b["callback_ms"], start if walk.at_ms is None else walk.at_ms)
            walk.count(walk.phase, begun)
            if walk.phase == JOIN and e["kind"] == "partitions_assigned":
                walk.phase = None
            walk.count(CALLBACKS, t)
    return {agent: walk.spent for agent, walk in walks.items() if walk.spent}


def episode_phases(bodies: Bodies) -> dict[str, Any]:
    """The gold/episodes phase columns of one episode's events: its slowest member's seconds in each
    phase (null where that member showed none: a protocol without the phase, or telemetry without
    it) and that member's agent_id; all null when no member showed any."""
    spent = member_phases(bodies)
    if not spent:
        return {**dict.fromkeys(REBALANCE_PHASE_NAMES), SLOWEST: None}
    slowest = max(spent, key=lambda agent: (sum(spent[agent].values()), agent))
    of = spent[slowest]
    return {**{name: of[name] / 1000.0 if name in of else None for name in REBALANCE_PHASE_NAMES}, SLOWEST: slowest}
