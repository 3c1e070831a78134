"""The rebalances a classic group went through, read from its telemetry: what the assignor
models are checked against and what the what-if replays start from.

A round is one generation of a classic group: the members that took part (each with its
member id, group.instance.id and subscription at that moment), what each held before it,
and the assignment the group's assignor produced. Under the eager protocol every member's
assign callback carries its whole assignment. Under the cooperative protocol the leader
withholds every partition that changes owner, the losers revoke it, and the next
generation hands it over (assignors.md 1.3), so a round's target is what the members hold
after that follow-up generation. A static member that comes back within its session gets its stored assignment in the
same generation, without a round (assignors.md §3): it is not a round's member. KIP-848
groups have no group generation (the envelope carries the member epoch) and are not cut
into rounds here.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from consumer_agent.contract import LEAVING_STATES
from pipelines.gold.group_pass import body_of
from pipelines.simulator.group import Assignment, Member, TopicPartition
from pipelines.simulator.mixed_phase import Join, Leave, MixedGroup, MixedMember, Revokes

CHANGES = ("partitions_assigned", "partitions_revoked", "partitions_lost")


@dataclass(frozen=True)
class Round:
    generation: int
    assignor: str  # partition.assignment.strategy, as the envelope reports it
    cooperative: bool
    members: tuple[Member, ...]
    before: Assignment  # what each member held when the round started (its owned partitions)
    target: Assignment  # the assignor's result (after the cooperative follow-up generation)


def shows_whole_round(r: Round, partitions: dict[str, int]) -> bool:
    """Whether the round's target gives every partition of ``partitions`` to exactly one of its
    members. Not so when some member's events of the round are not under its generation: the
    envelope's generation is read when the event is made, so a callback the host serves late
    (after the group's next JoinGroup, most likely) carries a later one. Seen once, in a CI run
    on two loaded cores: a cooperative round with one of three members. Such a round cannot be
    replayed through a model: its members and holdings are incomplete."""
    held = sorted(tp for parts in r.target.values() for tp in parts)
    return held == sorted((t, p) for t, n in partitions.items() for p in range(n))


def partition_counts(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Partitions per topic, as far as the group's assignments show them (every partition
    of a subscribed topic is assigned to someone)."""
    counts: dict[str, int] = {}
    for e in events:
        if e["kind"] == "partitions_assigned":
            for p in body_of(e)["partitions"]:
                counts[p["topic"]] = max(counts.get(p["topic"], 0), p["partition"] + 1)
    return counts


def rounds_of(events: Iterable[dict[str, Any]]) -> list[Round]:
    """The classic rounds of one group's events, in generation order."""
    ordered = sorted(events, key=lambda e: (e["event_time_ms"], e["agent_id"], e["seq"]))
    owned: dict[str, set[TopicPartition]] = defaultdict(set)  # agent -> what it holds now
    subscription: dict[str, frozenset[str]] = {}
    # agent -> the subscription it (re)joined with: an eager member rejoins right after its revoke,
    # so a subscribe() call after that revoke (a race with another member's change) comes a round later
    joined_with: dict[str, frozenset[str]] = {}
    before: dict[tuple[int, str], frozenset[TopicPartition]] = {}  # (generation, agent) -> held when it joined it
    held_at: dict[int, dict[str, tuple[Member, frozenset[TopicPartition]]]] = {}
    assignors: dict[int, tuple[str, bool]] = {}
    revoked_in: set[int] = set()  # generations in which a cooperative member revoked (a follow-up comes)
    for e in ordered:
        kind, agent, g = e["kind"], e["agent_id"], e["generation"]
        if kind == "member_config":
            subscription[agent] = frozenset(body_of(e)["topics"])
            if body_of(e)["reason"] == "start":
                joined_with[agent] = subscription[agent]
            continue
        if e["group_protocol"] != "classic" or g < 0 or kind not in CHANGES:
            continue
        body = body_of(e)
        parts = {(p["topic"], p["partition"]) for p in body["partitions"]}
        before.setdefault((g, agent), frozenset(owned[agent]))
        if kind == "partitions_assigned":
            owned[agent] = owned[agent] | parts if body["incremental"] else parts
            if e["group_instance_id"] and any(m.group_instance_id == e["group_instance_id"] and a != agent
                                              for a, (m, _) in held_at.get(g, {}).items()):
                continue  # a static member back within its session: the broker's stored assignment, no round
            topics = subscription.get(agent, frozenset())
            if not body["incremental"]:
                topics = joined_with.get(agent, topics)
            member = Member(e["member_id"], e["group_instance_id"], topics)
            held_at.setdefault(g, {})[agent] = (member, frozenset(owned[agent]))
            assignors[g] = (e["assignor"], e["rebalance_protocol"] == "cooperative")
        else:
            owned[agent] = owned[agent] - parts if body["incremental"] else set()
            if not body["incremental"]:
                joined_with[agent] = subscription.get(agent, frozenset())
            if body["incremental"] and parts:
                revoked_in.add(g)
    out = []
    for g in sorted(held_at):
        assignor, cooperative = assignors[g]
        seen = held_at[g]
        final = held_at.get(g + 1, {}) if cooperative and g in revoked_in else {}
        members = tuple(sorted((m for m, _ in seen.values()), key=lambda m: m.member_id))
        out.append(Round(g, assignor, cooperative, members,
                         before={m.member_id: set(before[(g, a)]) for a, (m, _) in seen.items()},
                         target={m.member_id: set(final.get(a, (m, held))[1]) for a, (m, held) in seen.items()}))
    return out


@dataclass(frozen=True)
class Settled:
    """A KIP-848 group between two membership changes, once its members had reconciled:
    who was in it, what they held before the change, and what they held once settled."""

    at_ms: int  # the change
    assignor: str  # group.remote.assignor as the envelope reports it (broker-default: uniform)
    members: tuple[Member, ...]
    before: Assignment
    target: Assignment


_Live = dict[str, tuple[str | None, frozenset[str]]]  # agent -> (group.instance.id, subscription)
_Holdings = dict[str, frozenset[TopicPartition]]  # agent -> what it holds


@dataclass
class _ConsumerHistory:
    """A KIP-848 group's telemetry replayed: its membership changes (when, the live members after
    it, their holdings before it), the live members' holdings after each event, when partitions
    moved, the member ids and the assignor."""

    changes: list[tuple[int, _Live, _Holdings]]
    held_at: list[tuple[int, _Holdings]]
    move_times: list[int]
    member_id: dict[str, str]  # agent -> the member id the broker gave it
    assignor: str = "uniform"


def _consumer_history(ordered: list[dict[str, Any]]) -> _ConsumerHistory:
    """The history of ``ordered`` (a group's events in time order) under the consumer protocol."""
    owned: dict[str, frozenset[TopicPartition]] = defaultdict(frozenset)  # agent -> what it holds now
    live: _Live = {}
    history = _ConsumerHistory([], [], [], {})
    for e in ordered:
        kind, agent = e["kind"], e["agent_id"]
        if e["group_protocol"] != "consumer":
            continue
        if e["member_id"]:
            history.member_id[agent] = e["member_id"]
        leaving = kind == "state_transition" and body_of(e)["to_state"] in LEAVING_STATES
        if kind == "member_config" or (leaving and agent in live):
            before = {a: owned[a] for a in live}
            if kind == "member_config":
                live[agent] = (e["group_instance_id"], frozenset(body_of(e)["topics"]))
            else:
                live.pop(agent)
            history.changes.append((e["event_time_ms"], dict(live), before))
        elif kind in CHANGES:
            history.move_times.append(e["event_time_ms"])
            parts = frozenset((p["topic"], p["partition"]) for p in body_of(e)["partitions"])
            owned[agent] = owned[agent] | parts if kind == "partitions_assigned" else owned[agent] - parts
            if e["assignor"] not in (None, "", "broker-default"):
                history.assignor = e["assignor"]
        history.held_at.append((e["event_time_ms"], {a: owned[a] for a in live}))
    return history


def _reconciling(history: _ConsumerHistory, i: int, until: int | None, quiet_ms: int) -> bool:
    """Whether a member was still reconciling on either side of change ``i`` (which lasts ``until``)."""
    at = history.changes[i][0]
    previous = history.changes[i - 1][0] if i else None
    moves = [t for t in history.move_times if (previous is None or t >= previous) and (until is None or t < until)]
    quiet_before = [t for t in moves if t < at]
    quiet_after = [t for t in moves if t >= at]
    return ((previous is not None and at - previous < quiet_ms)
            or (bool(quiet_before) and at - quiet_before[-1] < quiet_ms)
            or (until is not None and bool(quiet_after) and until - quiet_after[-1] < quiet_ms))


def consumer_rounds(events: Iterable[dict[str, Any]], quiet_ms: int = 250) -> list[Settled]:
    """A KIP-848 group's settled assignments, one per membership or subscription change.

    The broker computes a new target at each change and members reconcile to it over
    heartbeats; what every member holds just before the next change (or the end) is that
    target if every partition of the subscribed topics is held by exactly one live member
    then (else the change is skipped: the group had not settled). Members are the ones
    that joined and had not left at the change, with the subscription they last reported.
    A change is skipped when a member assigned or revoked within ``quiet_ms`` before it or
    before the next one (members still reconciling, as while a group forms): the holdings
    on that side are no target."""
    ordered = sorted(events, key=lambda e: (e["event_time_ms"], e["agent_id"], e["seq"]))
    counts = partition_counts(ordered)
    history = _consumer_history(ordered)
    member_id, changes = history.member_id, history.changes
    out = []
    for i, (at, members, before) in enumerate(changes):
        until = changes[i + 1][0] if i + 1 < len(changes) else None
        after = [held for t, held in history.held_at if t >= at and (until is None or t < until)]
        if not after or not members or any(a not in member_id for a in members):
            continue
        if _reconciling(history, i, until, quiet_ms):
            continue  # a member was still reconciling at a change: that side is no settled target
        final = after[-1]
        topics = set().union(*(subscription for _, subscription in members.values()))
        wanted = sorted((t, p) for t, n in counts.items() if t in topics for p in range(n))
        if sorted(tp for a in members for tp in final.get(a, ())) != wanted:
            continue  # not settled before the next change
        out.append(Settled(at, history.assignor,
                           tuple(sorted((Member(member_id[a], gid, sub) for a, (gid, sub) in members.items()),
                                        key=lambda m: m.member_id)),
                           {member_id[a]: set(tps) for a, tps in before.items() if a in members},
                           {member_id[a]: set(final.get(a, ())) for a in members}))
    return out


@dataclass(frozen=True)
class MixedStep:
    """One membership change of a group on its way between protocols, as telemetry shows it: the
    group just before (``mixed_phase``'s inputs) and what the broker made of it."""

    at_ms: int
    change: Join | Leave
    group: MixedGroup  # live members (a static one that closed keeps its place), their holdings as target
    bumped_to: int | None  # the epoch the change started, None when it started none
    revokes: Revokes  # the staying members' non-empty revoke callbacks of that epoch
    after: Assignment  # what the members held once it settled (just before the next change took effect)


def _mixed_member(e: dict[str, Any], member_id: str) -> MixedMember:
    kind = "consumer" if e["group_protocol"] == "consumer" else e["rebalance_protocol"]
    remote = e["assignor"] if kind == "consumer" and e["assignor"] not in (None, "", "broker-default") else None
    return MixedMember(Member(member_id, e["group_instance_id"], frozenset(body_of(e)["topics"])), kind, remote)


def _parts(e: dict[str, Any]) -> set[TopicPartition]:
    return {(p["topic"], p["partition"]) for p in body_of(e)["partitions"]}


def _held_at(callbacks: list[dict[str, Any]], closing: set[int], t: int) -> dict[str, set[TopicPartition]]:
    """Each agent's holdings just before ``t``; a member's callbacks while closing (``closing``) are
    left out, so one that closed keeps what it held (a static member's place waits with it)."""
    owned: dict[str, set[TopicPartition]] = defaultdict(set)
    for e in callbacks:
        if e["event_time_ms"] >= t:
            break
        if id(e) in closing:
            continue
        incremental, got, agent = body_of(e)["incremental"], _parts(e), e["agent_id"]
        if e["kind"] == "partitions_assigned":
            owned[agent] = owned[agent] | got if incremental else got
        else:
            owned[agent] = owned[agent] - got if incremental else set()
    return owned


def _epochs_started(changes: list[dict[str, Any]], callbacks: list[dict[str, Any]], epoch: int) -> list[int | None]:
    """The epoch each change started (None: none): a join the epoch of its member's first assignment
    if that is past the group's; a leave the one after its member's last, if anyone else's callback is
    of it, unless the group is still classic and the next change is a consumer-protocol join first
    assigned in it (P2: that join finished the round)."""
    def first_assigned(c: dict[str, Any]) -> int:
        return next((e["generation"] for e in callbacks if e["agent_id"] == c["agent_id"]
                     and e["kind"] == "partitions_assigned"), -1)

    out: list[int | None] = []
    classic = True  # no consumer-protocol member has joined yet
    for i, c in enumerate(changes):
        if c["kind"] == "member_config":
            first = first_assigned(c)
            started = first if first > epoch else None
        else:
            after = max((e["generation"] for e in callbacks if e["agent_id"] == c["agent_id"]), default=-1) + 1
            later = changes[i + 1] if i + 1 < len(changes) else None
            finished_by_join = (classic and later is not None and later["kind"] == "member_config"
                                and later["group_protocol"] == "consumer" and first_assigned(later) == after)
            started = after if not finished_by_join and any(
                e["generation"] == after and e["agent_id"] != c["agent_id"] for e in callbacks) else None
        out.append(started)
        epoch = started or epoch
        classic = classic and not (c["kind"] == "member_config" and c["group_protocol"] == "consumer")
    return out


def _epoch_of(e: dict[str, Any], started: list[int], since_ms: int) -> int | None:
    """The epoch a callback belongs to, as librdkafka 2.16 reports them: an assign carries its own; a
    revoke the one before (an eager classic member revokes on being told to rejoin; a consumer-protocol
    member stays at its old epoch until it has revoked), so it belongs to the first one started after."""
    if e["kind"] == "partitions_assigned":
        return e["generation"]
    return next((b for b in started if b > e["generation"]), None) if e["event_time_ms"] >= since_ms else None


@dataclass(frozen=True)
class _Rollout:
    """A migrating group's changes (``mixed_steps``) and its callbacks: which were made while their
    member was closing, the epoch each change started and each epoch's callbacks."""

    changes: list[dict[str, Any]]
    callbacks: list[dict[str, Any]]
    closing: set[int]  # the id() of each callback made while its member was closing
    epoch: int  # the classic generation before the first change
    bumps: list[int | None]  # the epoch each change started, None when it started none
    of_epoch: dict[int, list[dict[str, Any]]]  # a started epoch's callbacks, its closing members' aside

    def effect_ms(self, i: int) -> int:
        """When change ``i`` took effect: a leave when it was made; a join at its epoch's first
        callback (or its member's first, if earlier)."""
        c = self.changes[i]
        if c["kind"] != "member_config":
            return c["event_time_ms"]
        own = [e["event_time_ms"] for e in self.callbacks if e["agent_id"] == c["agent_id"]][:1]
        return min([e["event_time_ms"] for e in self.of_epoch.get(self.bumps[i], [])] + own,
                   default=c["event_time_ms"])

    def held_at(self, t: int) -> dict[str, set[TopicPartition]]:
        return _held_at(self.callbacks, self.closing, t)


def _rollout(ordered: list[dict[str, Any]], ids: dict[str, str], starts: list[dict[str, Any]],
             leaves: list[dict[str, Any]], first: int, last: int) -> _Rollout:
    """The changes from the first leave (at ``first``) to the last start (at ``last``), and the
    callbacks read with them."""
    marks = {id(e) for e in starts + leaves}
    changes = [e for e in ordered if id(e) in marks and first <= e["event_time_ms"] <= last and e["agent_id"] in ids]
    callbacks = [e for e in ordered if e["kind"] in CHANGES]
    leaving_at = {e["agent_id"]: e["event_time_ms"] for e in leaves}
    closing = {id(e) for e in callbacks if e["event_time_ms"] >= leaving_at.get(e["agent_id"], e["event_time_ms"] + 1)}
    epoch = max((e["generation"] for e in callbacks if e["event_time_ms"] < first), default=-1)  # the classic one
    bumps = _epochs_started(changes, callbacks, epoch)
    started = sorted(b for b in bumps if b is not None)
    of_epoch = {b: [e for e in callbacks if id(e) not in closing and _epoch_of(e, started, first) == b]
                for b in started}
    return _Rollout(changes, callbacks, closing, epoch, bumps, of_epoch)


def _apply_change(c: dict[str, Any], member_id: str, bump: int | None, live: dict[str, MixedMember],
                  away: set[str]) -> Join | Leave:
    """The change ``c`` made to the group: ``live`` and ``away`` (static members that closed and keep
    their place until replaced) updated in place."""
    agent = c["agent_id"]
    if c["kind"] == "member_config":
        joiner = _mixed_member(c, member_id)
        for a in [a for a in away if joiner.member.group_instance_id == live[a].member.group_instance_id]:
            del live[a]
            away.discard(a)
        live[agent] = joiner
        return Join(joiner)
    # a dynamic member's leave that started no epoch: the next change finished its round (P2)
    static = live[agent].member.group_instance_id is not None
    change = Leave(member_id, settles=bump is not None or static)
    if static:
        away.add(agent)
    if agent not in away:
        del live[agent]
    return change


def _revokes(callbacks: list[dict[str, Any]], live: dict[str, MixedMember]) -> Revokes:
    """The live members' non-empty revoke callbacks among ``callbacks`` (an epoch's)."""
    revokes: Revokes = {}
    for e in callbacks:
        if e["kind"] != "partitions_assigned" and e["agent_id"] in live and _parts(e):
            member = live[e["agent_id"]].member.member_id
            revokes[member] = revokes.get(member, ()) + (frozenset(_parts(e)),)
    return revokes


def mixed_steps(events: Iterable[dict[str, Any]]) -> list[MixedStep]:
    """A migrating group's changes from its first leave (the first step of a rollout) to its last start
    (the leaves after it are the run's end), each with the group just before it took effect (a join:
    at its epoch's first callback), the epoch it started, its callbacks and the group once settled
    (just before the next change took effect). A classic leave that started no epoch before the next
    change is one whose round that change finished (``Leave.settles`` False: P2)."""
    ordered = sorted(events, key=lambda e: (e["event_time_ms"], e["agent_id"], e["seq"]))
    ids = {e["agent_id"]: e["member_id"] for e in reversed(ordered) if e["member_id"] and e["generation"] >= 0}
    starts = [e for e in ordered if e["kind"] == "member_config" and body_of(e)["reason"] == "start"]
    leaves = [e for e in ordered if e["kind"] == "state_transition" and body_of(e)["to_state"] in LEAVING_STATES
              and body_of(e)["from_state"] not in LEAVING_STATES]
    if not leaves or not starts:
        return []
    first, last = leaves[0]["event_time_ms"], starts[-1]["event_time_ms"]
    rollout = _rollout(ordered, ids, starts, leaves, first, last)
    changes, bumps, epoch = rollout.changes, rollout.bumps, rollout.epoch
    classic = next(("classic:" + e["assignor"] for e in ordered if e["group_protocol"] == "classic"), "classic:range")
    live = {e["agent_id"]: _mixed_member(e, ids[e["agent_id"]]) for e in starts
            if e["event_time_ms"] < first and e["agent_id"] in ids}
    away: set[str] = set()  # static members that closed and keep their place until replaced
    end = next((e["event_time_ms"] for e in leaves if e["event_time_ms"] > last), ordered[-1]["event_time_ms"] + 1)
    out = []
    for i, c in enumerate(changes):
        held = rollout.held_at(rollout.effect_ms(i))
        group = MixedGroup(classic, tuple(live.values()), {m.member.member_id: set(held[a]) for a, m in live.items()},
                           epoch, converted=any(m.kind == "consumer" for m in live.values()))
        change = _apply_change(c, ids[c["agent_id"]], bumps[i], live, away)
        revokes = _revokes(rollout.of_epoch.get(bumps[i], []), live)
        settled = rollout.held_at(rollout.effect_ms(i + 1) if i + 1 < len(changes) else end)
        out.append(MixedStep(c["event_time_ms"], change, group, bumps[i], revokes,
                             {m.member.member_id: set(settled[a]) for a, m in live.items() if a not in away}))
        epoch = bumps[i] or epoch
    return out
