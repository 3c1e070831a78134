"""Replay a group's observed membership timeline under another configuration.

The timeline comes from ``gold/members`` (one row per member process): who formed the
group, who joined and left when (and why), who crashed, stalled past
``max.poll.interval.ms``, changed its subscription or asked for a rebalance. A
``Setup`` says how the group would run: its assignor (``pipelines.simulator.assignors``
names), static membership, and the two timeouts. ``replay`` walks the changes in time
order and, for each one that makes the group rebalance under that setup, runs the
assignor model and lists the partition handoffs the rebalance makes:

- eager protocols revoke every partition at every rebalance: each owned partition is a
  handoff (to its own member again, or another), as librdkafka's eager rebalance is;
- cooperative ones (classic cooperative-sticky, every KIP-848 assignor) hand over only
  the partitions that change owner, and those of members that left;
- with static membership a restart (a leave followed by its replacement within
  ``session.timeout.ms``) is no rebalance at all: the member's own partitions wait
  for it (assignors.md §3); a static member that leaves for good sends no LeaveGroup,
  so the group rebalances only when its session expires, and partitions assigned to
  members that have gone but not yet expired are not read by anyone (no handoff);
  a crash is found after ``session.timeout.ms``;
- a stall shorter than ``max.poll.interval.ms`` is no rebalance; a longer one under the classic
  protocol is noticed ``max.poll.interval.ms`` after the last poll (the member leaves, its
  partitions move, it rejoins when it polls again); under KIP-848 its partitions wait out the
  whole stall and come back to it (``held``: librdkafka 2.16 on Kafka 4.2 logged "leaving group"
  at the timeout, yet nobody else read them; docs/measured.md);
- an enforced rebalance is what the agent's ``enforce_rebalance`` does (``_enforce``).

What a handoff costs is the cost model's business (``pipelines.simulator.cost_model``).
The replay is pure and deterministic: the classic models do not depend on the order members
are listed in, and the KIP-848 ones get them in the order they joined; the assignors order them
by their ids, the observed ones unless a ``renaming`` (``member_ids``) gives others.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pipelines.simulator.assignors import ASSIGNORS, assign
from pipelines.simulator.group import Assignment, Member, TopicPartition
from pipelines.simulator.handoff import classic_cooperative_rounds, owners
from pipelines.simulator.member_ids import Renaming
from pipelines.vocabulary import RESTART_CAUSES

HandoffKind = Literal["graceful", "lost", "crash", "bounce", "held"]
FIRST_READ_MS = 1_000  # a member given a partition reads it within this (the measured handoffs: 0.1-0.9 s)
ROUND_MS = 500  # changes this close make one rebalance (one join round; KIP-848: leaves only)
# unless the group showed its own classic join round (``observed_round_ms``)
LEAVING: dict[str, HandoffKind] = {"leave": "graceful", "expire": "graceful", "crash": "crash", "stall": "lost"}
# Changes whose member's own partitions wait for it, no rebalance: a static restart, a KIP-848 stall.
WAITING: dict[str, HandoffKind] = {"bounce": "bounce", "hold": "held"}


@dataclass(frozen=True)
class Setup:
    """How a group runs, as far as its rebalances go."""

    assignor: str  # an ``ASSIGNORS`` name, e.g. classic:range, consumer:uniform
    static: bool  # group.instance.id on every member
    session_timeout_ms: int
    max_poll_interval_ms: int

    @property
    def cooperative(self) -> bool:
        return ASSIGNORS[self.assignor].rebalance_protocol == "cooperative"


@dataclass(frozen=True)
class SimHandoff:
    partition: TopicPartition
    kind: HandoffKind  # how the previous owner let go
    moved: bool  # to another member (an eager rebalance also hands a partition back to its owner)
    down_s: float = 0.0  # a bounce: how long the member was away; a static leave: the session it waited out
    to: str = ""  # the logical member that gets it
    left: bool = False  # its owner left the group (closed, unsubscribed, or its static session expired)


@dataclass(frozen=True)
class SimRebalance:
    at_ms: int
    trigger: str  # the cause names of ``pipelines.gold.causes``
    handoffs: tuple[SimHandoff, ...]
    group_rebalance: bool = True  # False: a static member's return, which the group does not notice


@dataclass(frozen=True)
class Change:
    at_ms: int
    kind: str  # join, leave, depart, expire, crash, stall, back, hold, subscribe, enforce, bounce
    member: str  # the logical member: a chain of restarts under static membership is one
    cause: str
    topics: frozenset[str] = frozenset()
    down_s: float = 0.0


@dataclass
class _Group:
    setup: Setup
    partitions: dict[str, int]
    assignments: Assignments
    members: dict[str, Member] = field(default_factory=dict)  # logical member -> its assignor view, join order
    departed: set[str] = field(default_factory=set)  # static members gone whose sessions have not expired
    owned: Assignment = field(default_factory=dict)
    rebalances: list[SimRebalance] = field(default_factory=list)  # the round's, until ``replay`` yields them


def restart_pairs(members: list[dict[str, Any]]) -> dict[str, str]:
    """leaving agent -> the agent that replaced it: each restart leave with the first later restart join."""
    joins = sorted((m for m in members if m["join_cause"] in RESTART_CAUSES), key=lambda m: m["joined_ms"])
    pairs: dict[str, str] = {}
    for leaver in sorted((m for m in members if m["leave_cause"] in RESTART_CAUSES), key=lambda m: m["left_ms"]):
        joiner = next((j for j in joins if j["joined_ms"] >= leaver["left_ms"]), None)
        if joiner is not None:
            joins.remove(joiner)
            pairs[leaver["agent_id"]] = joiner["agent_id"]
    return pairs


def observed_round_ms(members: list[dict[str, Any]], handoffs: list[dict[str, Any]]) -> int:
    """A classic group's join round as its restarts showed it: the window (nearest ``ROUND_MS``) that
    best separates the restarts whose rejoin made one rebalance with the leave (the leaver's last
    partitions and the joiner's first moved at one generation) from those that made two.

    A round stays open until every member has rejoined, each at its next heartbeat, so whether a
    quick restart makes one rebalance or two is the heartbeats' luck: rolling-restart under range
    with 1 s heartbeats merged restarts of 0.69 and 0.74 s and split one of 0.75 s, where a fixed
    0.5 s made six rebalances of four and priced 2,168 duplicates for 1,445. A replay of the
    observed period takes the rounds the period had."""
    released: dict[str, int] = {}  # agent -> the generation that moved its last partitions
    first: dict[str, int] = {}  # agent -> the generation of its first partitions
    for h in handoffs:
        g = h["generation"]
        if g is None or g < 0:
            continue
        if h["prev_agent_id"] is not None:
            released[h["prev_agent_id"]] = max(g, released.get(h["prev_agent_id"], g))
        first[h["next_agent_id"]] = min(g, first.get(h["next_agent_id"], g))
    joined = {m["agent_id"]: m["joined_ms"] for m in members}
    left = {m["agent_id"]: m["left_ms"] for m in members}
    static = {m["agent_id"] for m in members if m.get("group_instance_id")}  # back in its old generation: no round
    seen = [(joined[j] - left[leaver], released[leaver] == first[j])
            for leaver, j in restart_pairs(members).items()
            if leaver in released and j in first and leaver not in static]
    windows = {ROUND_MS} | {max(0, gap - d) for gap, _ in seen for d in (0, 1)}
    return min(windows, key=lambda w: (sum((gap <= w) != merged for gap, merged in seen), abs(w - ROUND_MS)))


def _subscriptions(m: dict[str, Any]) -> list[tuple[int, frozenset[str]]]:
    return [(s["at_ms"], frozenset(s["topics"])) for s in m["subscriptions"]]


def observed_id(m: dict[str, Any]) -> str:
    """A member's id as the broker gave it (its agent's where none was seen)."""
    return m["member_id"] or m["agent_id"]


def changes_of(members: list[dict[str, Any]], setup: Setup, renaming: Renaming | None = None
               ) -> tuple[list[tuple[str, frozenset[str]]], list[Change]]:
    """(the members that formed the group with their subscriptions, the later changes in time order);
    ``renaming``: the ids members have in this replay (``member_ids.draws``; the observed ones by default)."""
    pairs = restart_pairs(members)
    # keyed by the broker's member ids: the assignors order members by them
    logical = {m["agent_id"]: (renaming or {}).get(observed_id(m), observed_id(m)) for m in members}
    by_agent = {m["agent_id"]: m for m in members}
    bounced: dict[str, str] = {}  # joiner -> the leaver it came back for, under static membership
    for leaver, joiner in sorted(pairs.items(), key=lambda p: by_agent[p[0]]["left_ms"]):
        down_s = (by_agent[joiner]["joined_ms"] - by_agent[leaver]["left_ms"]) / 1000.0
        if setup.static and down_s * 1000 < setup.session_timeout_ms:
            logical[joiner] = logical[leaver]
            bounced[joiner] = leaver
    formed, changes = [], []
    for m in sorted(members, key=lambda m: (m["joined_ms"], m["agent_id"])):
        agent, me = m["agent_id"], logical[m["agent_id"]]
        subs = _subscriptions(m)
        if m["join_cause"] == "start":
            formed.append((me, subs[0][1]))
        elif agent in bounced:
            leaver = bounced[agent]
            changes.append(Change(by_agent[leaver]["left_ms"], "bounce", me, "restart", subs[0][1],
                                  (m["joined_ms"] - by_agent[leaver]["left_ms"]) / 1000.0))
        else:
            changes.append(Change(m["joined_ms"], "join", me, m["join_cause"] or "scale_out", subs[0][1]))
        changes.extend(Change(at, "subscribe", me, "subscription_change", topics) for at, topics in subs[1:])
        changes.extend(Change(at, "enforce", me, "enforced") for at in m["enforced_ms"])
        for stall in m["stalls"]:  # the group notices a stall max.poll.interval.ms after the last poll
            back = stall["back_ms"] if stall["back_ms"] is not None else m["last_seen_ms"]
            stalled_s = (back - stall["began_ms"]) / 1000.0
            if stalled_s * 1000 < setup.max_poll_interval_ms:
                continue
            if setup.assignor.startswith("consumer:"):
                changes.append(Change(back, "hold", me, "poll_interval_exceeded", down_s=stalled_s))
            else:
                changes.append(Change(stall["began_ms"] + setup.max_poll_interval_ms, "stall", me,
                                      "poll_interval_exceeded", down_s=stalled_s))
                changes.append(Change(back, "back", me, "poll_interval_exceeded", subs[-1][1]))
        gone_for_good = agent not in bounced.values()
        if m["left_ms"] is not None and gone_for_good and setup.static:
            changes.append(Change(m["left_ms"], "depart", me, m["leave_cause"] or "scale_in"))
            changes.append(Change(m["left_ms"] + setup.session_timeout_ms, "expire", me, m["leave_cause"] or "scale_in",
                                  down_s=setup.session_timeout_ms / 1000.0))
        elif m["left_ms"] is not None and gone_for_good:
            changes.append(Change(m["left_ms"], "leave", me, m["leave_cause"] or "scale_in"))
        elif m["crashed"]:
            changes.append(Change(m["last_seen_ms"] + setup.session_timeout_ms, "crash", me, "crash"))
    changes.sort(key=lambda c: (c.at_ms, c.member))
    return formed, changes


class Assignments:
    """The assignments a group's replays computed, by their inputs. Setups of one assignor that
    differ in a timeout replay near-identical rounds (the same memberships until a crash or a stall
    tells them apart), and a model of a large group costs seconds a round; a non-sticky model's
    result does not depend on what members owned, so that is no part of its key.

    ``keep``: how many owned partitions the kept assignments may hold in all (keys and results);
    the first ones are kept, as a later replay meets them first. It bounds the memory whatever
    the window's length; 0 (a setup no other replay shares) keeps none."""

    def __init__(self, keep: int = 0) -> None:
        self._known: dict[tuple[Any, ...], Assignment] = {}
        self._room = keep

    def after(self, setup: Setup, members: list[Member], partitions: dict[str, int],
              previous: Assignment) -> Assignment:
        """What members own after a rebalance under ``setup`` (a classic cooperative one's last round)."""
        sticky = ASSIGNORS[setup.assignor].sticky
        key = (setup.assignor, tuple(members), tuple(partitions.items()),
               frozenset((m, frozenset(tps)) for m, tps in previous.items() if tps) if sticky else None)
        new = self._known.get(key)
        if new is None:
            if setup.assignor.startswith("classic:") and setup.cooperative:
                new = classic_cooperative_rounds(setup.assignor, members, partitions, previous)[-1]
            else:
                new = assign(setup.assignor, members, partitions, previous)
            size = sum(map(len, new.values())) + (sum(map(len, previous.values())) if sticky else 0)
            if size <= self._room:
                self._known[key] = new
                self._room -= size
        return {m: set(tps) for m, tps in new.items()}


def _rebalance(g: _Group, at_ms: int, trigger: str, gone: dict[str, HandoffKind], down_s: float = 0.0) -> None:
    """Run the assignor over the current members; ``gone``: members that left just now, and how."""
    members = list(g.members.values())
    previous = {m: tps for m, tps in g.owned.items() if m not in gone}
    new = g.assignments.after(g.setup, members, g.partitions, previous)
    before, after = owners(g.owned), owners(new)
    handoffs = []
    for tp, owner in sorted(after.items()):
        prev = before.get(tp)
        if prev is None or owner in g.departed:
            continue  # nobody had it (a new subscription starts), or nobody will read it
        moved = prev != owner
        if prev in gone:
            handoffs.append(SimHandoff(tp, gone[prev], True, down_s, owner, left=True))
        elif moved or not g.setup.cooperative:
            handoffs.append(SimHandoff(tp, "graceful", moved, to=owner))
    g.owned = new
    g.rebalances.append(SimRebalance(at_ms, trigger, tuple(handoffs)))


def replay(members: list[dict[str, Any]], partitions: dict[str, int], setup: Setup,
           assignments: Assignments | None = None, round_ms: int = ROUND_MS,
           renaming: Renaming | None = None) -> Iterator[SimRebalance]:
    """The rebalances after the group formed, under ``setup``, each with its handoffs; ``assignments``:
    those the group's other replays computed (to share them; none by default); ``round_ms``: a classic
    join round (``observed_round_ms``); ``renaming``: the members' ids in this replay. Each round's are
    yielded as it is replayed, not held: a week of a 2,000-partition group under an eager
    candidate is millions of handoffs (1.7 GiB in one worker when they were a list)."""
    formed, changes = changes_of(members, setup, renaming)
    g = _Group(setup, partitions, assignments or Assignments())
    for me, topics in formed:
        g.members[me] = Member(me, me if setup.static else None, topics)
    if not g.members:
        return
    reads = _reads_before_leaving(changes)
    g.owned = g.assignments.after(setup, list(g.members.values()), partitions, {})
    for batch in _rounds(changes, setup.assignor.startswith("consumer:"), round_ms):
        gone: dict[str, HandoffKind] = {}
        rejoin = False
        for c in batch:
            if c.kind in WAITING:  # the member's own partitions wait for it, nobody else's move
                mine = sorted(g.owned.get(c.member, ()))
                g.rebalances.append(SimRebalance(c.at_ms, c.cause, tuple(
                    SimHandoff(tp, WAITING[c.kind], False, c.down_s, c.member) for tp in mine), group_rebalance=False))
            elif c.kind == "depart":
                g.departed.add(c.member)
            elif c.kind in ("join", "back"):
                g.members[c.member] = Member(c.member, c.member if setup.static else None, c.topics)
                rejoin = True
            elif c.kind == "subscribe" and c.member in g.members:
                g.members[c.member] = Member(c.member, g.members[c.member].group_instance_id, c.topics)
                rejoin = True
            elif c.kind == "enforce" and c.member in g.members:
                _enforce(g, c)
            elif c.kind in LEAVING and g.members.pop(c.member, None) is not None:
                g.departed.discard(c.member)
                gone[c.member] = LEAVING[c.kind]
        if rejoin or gone:
            first = next(c for c in batch if c.kind not in (*WAITING, "depart"))
            _rebalance(g, first.at_ms, first.cause, gone,
                       max((c.down_s for c in batch if c.member in gone), default=0.0))
            for member in gone:
                g.owned.pop(member, None)
        yield from map(reads, g.rebalances)
        g.rebalances.clear()


def _enforce(g: _Group, c: Change) -> None:
    """The agent's ``enforce_rebalance`` (measured: docs/measured.md, tests/agent/test_enforce_rebalance.py):
    under eager protocols the caller revokes its own partitions and rejoins, getting them back
    (the group rebalances only when the caller leads it, which telemetry does not say);
    cooperative and KIP-848 members revoke nothing."""
    mine = sorted(g.owned.get(c.member, ())) if not g.setup.cooperative else []
    g.rebalances.append(SimRebalance(c.at_ms, c.cause, tuple(
        SimHandoff(tp, "graceful", False, to=c.member) for tp in mine)))


def _rounds(changes: list[Change], consumer_protocol: bool, round_ms: int) -> list[list[Change]]:
    """Changes in time order, those within ``round_ms`` (KIP-848: ``ROUND_MS``) of the first of a
    round in that round.

    A classic coordinator waits for every member to rejoin, so members leaving or joining
    together make one rebalance (two scaled in at once). A KIP-848 coordinator computes a
    new target at each heartbeat: a member that joins or changes its subscription sees its
    own at once, but the partitions of members that leave together reach the others at their
    next heartbeat, by which time every leave is in the target."""
    rounds: list[list[Change]] = []
    for c in changes:
        together = bool(rounds) and (not consumer_protocol or (
            c.kind in LEAVING and all(x.kind in LEAVING for x in rounds[-1])))
        if together and c.at_ms - rounds[-1][0].at_ms <= (ROUND_MS if consumer_protocol else round_ms):
            rounds[-1].append(c)
        else:
            rounds.append([c])
    return rounds


def _reads_before_leaving(changes: list[Change]) -> Callable[[SimRebalance], SimRebalance]:
    """A rebalance without its handoffs to members that go within ``FIRST_READ_MS`` of getting the
    partition: they read nothing (a fleet stopping member after member), so nobody re-reads
    or waits there, as nobody does in the measured group."""
    going: dict[str, list[int]] = {}
    for c in changes:
        if c.kind in ("leave", "depart", "crash", "stall"):
            going.setdefault(c.member, []).append(c.at_ms)

    def reads(h: SimHandoff, at_ms: int) -> bool:
        return not any(at_ms <= t <= at_ms + FIRST_READ_MS for t in going.get(h.to, ()))

    def kept(r: SimRebalance) -> SimRebalance:
        return SimRebalance(r.at_ms, r.trigger, tuple(h for h in r.handoffs if reads(h, r.at_ms)), r.group_rebalance)
    return kept
