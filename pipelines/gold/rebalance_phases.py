"""Where an episode's rebalance time went: join and sync, the application's callbacks, KIP-848's
reconciliation (``pipelines.vocabulary.REBALANCE_PHASES``), and the classic join's own steps
(``JOIN_STEPS``: JoinGroup, the leader's assignment, SyncGroup), from what the agents send.

Each member's time in the episode is cut into spans of two kinds:

- the agent's: a ``state_transition`` puts the member in the phase its new state belongs to
  (none for the others), and a ``partitions_*`` event's ``callback_ms`` is the callbacks' span
  ending at the event (the callback's start is never before the member's last accounted moment
  nor the episode's start). Such a span is counted only when both its ends are events of the
  episode. An assign callback also ends a join its agent reported no move out of.
- the client's own (``rebalance_timing``, the Java agent's): its rebalances, ending where the callback
  that carries them starts; classic, from the first JoinGroup sent to the SyncGroup answer (split into
  its steps by the -javaagent's advice on the coordinator, else whole: the client's metrics), KIP-848,
  from the target assignment received to the callback. A client span is counted whole (the client
  timed it; a crash's survivors begin to rejoin before anything of the episode is seen: the episode
  then starts where the first of them did, ``started_ms``). A member the client timed in a phase has
  its agent's spans of that phase dropped (they are the same time, seen coarser), its agent's other
  spans cut where the client's lie, and the callbacks cut out of the client's spans (KIP-848 runs them
  while reconciling): a member's phases are disjoint.

The episode's figures are its slowest member's, the one whose phases add up to most: the member the
group waited for, so the phases stack into one member's timeline; ``phase_source`` says how that
member's were timed (``pipelines.vocabulary.PHASE_SOURCES``): the Python agent and the Java agent
without a client timing infer states at poll granularity (librdkafka shows Python no join states; a
callback runs inside ``poll``). Its join steps are null unless its client's coordinator timed them; a
follower's SyncGroup waits for the leader's assignment, which is then the episode's leader's.
Pure: Spark's Python workers import it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from consumer_agent.contract import JOINING_STATE
from pipelines.gold.causes import Bodies
from pipelines.vocabulary import AGENT_STATES, JOIN_STEP_NAMES, PHASE_SOURCES, REBALANCE_PHASE_NAMES, REBALANCE_PHASES

CALLBACK_KINDS = frozenset({"partitions_assigned", "partitions_revoked", "partitions_lost"})
PHASE_OF_STATE = {state: p.name for p in REBALANCE_PHASES for state in p.states}
CALLBACKS = next(p.name for p in REBALANCE_PHASES if not p.states)
JOIN = PHASE_OF_STATE[JOINING_STATE]
RECONCILE = next(p.name for p in REBALANCE_PHASES if p.states and p.name != JOIN)
JOIN_GROUP, LEADER_ASSIGN, SYNC_GROUP = JOIN_STEP_NAMES
SLOWEST = "slowest_agent_id"  # the gold/episodes column naming whose phases they are
SOURCE = "phase_source"  # the gold/episodes column saying how they were timed
STARTED = "started_ms"  # where the episode's earliest client-timed rebalance began (not a column)
# The phase columns of an episode no member showed a phase of (none seen by an agent: the broker's alone).
NO_PHASES: dict[str, Any] = {**dict.fromkeys((*REBALANCE_PHASE_NAMES, *JOIN_STEP_NAMES)), SOURCE: None, SLOWEST: None}
Span = tuple[float, float]


def union(spans: list[Span]) -> list[Span]:
    """The spans merged where they overlap or touch, in order."""
    out: list[Span] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def minus(spans: list[Span], cuts: list[Span]) -> list[Span]:
    """What of ``spans`` (merged) lies outside every one of ``cuts``."""
    out = []
    for a, b in union(spans):
        for c, d in union(cuts):
            if d <= a or c >= b:
                continue
            if c > a:
                out.append((a, c))
            a = max(a, d)
            if a >= b:
                break
        if a < b:
            out.append((a, b))
    return out


def length(spans: list[Span]) -> float:
    return sum(b - a for a, b in spans)


@dataclass
class _Walk:
    """One member's time in an episode: its agent's spans by phase (the moment accounted up to and
    its phase since then), the client's spans by phase, its join steps (ms) and their source."""

    at_ms: float | None = None
    phase: str | None = None
    agent: dict[str, list[Span]] = field(default_factory=dict)
    client: dict[str, list[Span]] = field(default_factory=dict)
    steps: dict[str, float] = field(default_factory=dict)
    sources: set[str] = field(default_factory=set)

    def count(self, phase: str | None, until_ms: float) -> None:
        """``phase`` took the time from the last accounted moment to ``until_ms`` (if both are seen)."""
        if phase is not None and self.at_ms is not None:  # an empty span still shows the phase
            self.agent.setdefault(phase, []).append((self.at_ms, max(self.at_ms, until_ms)))
        self.at_ms = until_ms if self.at_ms is None else max(self.at_ms, until_ms)

    def timed(self, timing: dict[str, Any] | None, callback_start: float) -> None:
        """The client's ``rebalance_timing`` of a callback starting at ``callback_start``."""
        if not timing:
            return
        steps = [timing.get(k) for k in ("join_ms", "assign_ms", "sync_ms")]
        if timing.get("reconcile_ms") is not None:
            self.client.setdefault(RECONCILE, []).append((callback_start - timing["reconcile_ms"], callback_start))
        elif all(s is not None for s in steps):
            self.client.setdefault(JOIN, []).append((callback_start - sum(steps), callback_start))
            for name, ms in zip(JOIN_STEP_NAMES, steps):
                self.steps[name] = self.steps.get(name, 0.0) + ms
        elif timing.get("rebalance_ms"):
            self.client.setdefault(JOIN, []).append((callback_start - timing["rebalance_ms"], callback_start))
        else:
            return
        self.sources.add(timing["source"])

    def spent(self) -> dict[str, float]:
        """Milliseconds per phase (a phase it never showed is absent), disjoint (see the module docstring)."""
        callbacks = self.agent.get(CALLBACKS, [])
        clients = [s for spans in self.client.values() for s in spans]
        out = {CALLBACKS: length(callbacks)} if callbacks else {}
        for phase in (p for p in REBALANCE_PHASE_NAMES if p != CALLBACKS):
            if phase in self.client:
                out[phase] = length(minus(self.client[phase], callbacks))
            elif phase in self.agent:
                out[phase] = length(minus(self.agent[phase], clients))
        return out


def _walks(bodies: Bodies) -> dict[str, _Walk]:
    start = bodies[0][0]["event_time_ms"]
    walks: dict[str, _Walk] = {}
    for e, b in bodies:
        walk = walks.setdefault(e["agent_id"], _Walk())
        t = e["event_time_ms"]
        if e["kind"] == "state_transition":
            walk.count(walk.phase, t)
            walk.phase = PHASE_OF_STATE.get(b["to_state"])
        elif e["kind"] in CALLBACK_KINDS:
            walk.timed(b.get("rebalance_timing"), t - b["callback_ms"])
            begun = max(t - b["callback_ms"], start if walk.at_ms is None else walk.at_ms)
            walk.count(walk.phase, begun)
            if walk.phase == JOIN and e["kind"] == "partitions_assigned":
                walk.phase = None
            walk.count(CALLBACKS, t)
    return walks


def member_phases(bodies: Bodies) -> dict[str, dict[str, float]]:
    """agent_id -> phase -> milliseconds, over one episode's events with their bodies (in time order)."""
    if not bodies:
        return {}
    spent = {agent: walk.spent() for agent, walk in _walks(bodies).items()}
    return {agent: phases for agent, phases in spent.items() if phases}


def _join_steps(walks: dict[str, _Walk], slowest: str) -> dict[str, float | None]:
    """The slowest member's join steps in seconds (null unless its coordinator timed them): a follower's
    SyncGroup holds the episode's leaders' assignments, so they come out of it."""
    own = walks[slowest].steps
    if not own:
        return dict.fromkeys(JOIN_STEP_NAMES)
    assign, sync = own[LEADER_ASSIGN], own[SYNC_GROUP]
    if not assign:
        assign = min(sync, sum(w.steps.get(LEADER_ASSIGN, 0.0) for a, w in walks.items() if a != slowest))
        sync -= assign
    return {JOIN_GROUP: own[JOIN_GROUP] / 1000.0, LEADER_ASSIGN: assign / 1000.0, SYNC_GROUP: sync / 1000.0}


def episode_phases(bodies: Bodies) -> dict[str, Any]:
    """The gold/episodes phase columns of one episode's events: its slowest member's seconds in each
    phase (null where that member showed none: a protocol without the phase, or telemetry without
    it), its join steps, how they were timed and that member's agent_id, all null when no member
    showed any; and ``started_ms``, the earliest start of a client-timed span (None without one)."""
    walks = _walks(bodies) if bodies else {}
    spent = {agent: walk.spent() for agent, walk in walks.items()}
    spent = {agent: phases for agent, phases in spent.items() if phases}
    starts = [a for w in walks.values() for spans in w.client.values() for a, _ in spans]
    started = min(starts) if starts else None
    if not spent:
        return {**NO_PHASES, STARTED: started}
    slowest = max(spent, key=lambda agent: (sum(spent[agent].values()), agent))
    of, walk = spent[slowest], walks[slowest]
    source = min(walk.sources, key=PHASE_SOURCES.index) if walk.sources else AGENT_STATES  # the finest
    return {**{name: of[name] / 1000.0 if name in of else None for name in REBALANCE_PHASE_NAMES},
            **_join_steps(walks, slowest), SOURCE: source, SLOWEST: slowest, STARTED: started}
