"""A staged KIP-848 migration's mixed phase: every member of a classic group restarted on
``group.protocol=consumer`` one at a time, as the Kafka 4.2 broker runs it (its
``group.consumer.migration.policy`` bidirectional, the default), priced by the group's cost model.

The broker's rules are ``pipelines.simulator.mixed_phase``'s (checked change by change against the
embedded broker): the first consumer-protocol member converts the group with nothing moved, each
dynamic leave or join then bumps the epoch, at each bump an eager classic member gives back all it
holds (a handoff to itself for what it keeps) while the others give back what moves, and a static
member restarted with the same topics replaces its old self: no bump, only its own partitions wait.
The first dynamic migrant may be back before the classic round its leave starts has completed
(P2): then the conversion finishes that round, one bump, and its partitions wait for it; how
likely that is follows from its time away and the classic heartbeat (``lands_first``).

Pure: rounds of ``SimHandoff`` in, each priced by the cost model under the gainer's protocol.
"""
from __future__ import annotations

from dataclasses import replace

from pipelines.simulator.assignors import ASSIGNORS
from pipelines.simulator.cost_model import Fitted, Priced, price
from pipelines.simulator.group import Assignment, Member
from pipelines.simulator.handoff import owners
from pipelines.simulator.mixed_phase import Bump, Join, Leave, MixedGroup, MixedMember, replaced, step
from pipelines.simulator.replay import SimHandoff, SimRebalance

CONSUMER = "consumer"


def _rebalance(bump: Bump, after: MixedGroup, left: Assignment, down_s: float,
               at_ms: int) -> list[tuple[SimRebalance, str]]:
    """One bump's handoffs (every revoked partition, and those of the members that ``left`` since the
    last bump, to their owners in the new target), grouped by the protocol kind each is priced by:
    the gainer's once the group is converted."""
    to = owners(bump.target)
    kinds = {m.member.member_id: m.kind for m in after.members}
    classic = ASSIGNORS[after.classic_assignor].rebalance_protocol
    by_kind: dict[str, list[SimHandoff]] = {}
    for member, tps, gone in [(m, tps, False) for m, callbacks in bump.revokes.items() for tps in callbacks] + \
            [(m, tps, True) for m, tps in left.items()]:
        for tp in sorted(tps):
            gainer = to.get(tp, "")
            kind = CONSUMER if bump.rule == "R4" and kinds.get(gainer, CONSUMER) == CONSUMER else classic
            if gone and gainer in (member, ""):  # its partitions wait for it: P2 (the migrant back before its
                # leave's round completed), or no one else in the group subscribes to them
                handoff = SimHandoff(tp, "bounce", False, down_s, member)
            else:
                # a leave is ``left`` (a scale-in's heartbeat-long wait) only in a classic round: once
                # converted, the broker hands a leaver's partitions on at once (scale-out-in's mixed
                # phase, ground truth: 0.08-0.57 s for them, against 0.8-1.1 s for a classic scale-in's)
                handoff = SimHandoff(tp, "graceful", gainer != member, to=gainer, left=gone and bump.rule == "classic")
            by_kind.setdefault(kind, []).append(handoff)
    return [(SimRebalance(at_ms, "protocol_migration", tuple(hs)), kind) for kind, hs in by_kind.items()]


def lands_first(down_s: float, heartbeat_s: float, others: int) -> float:
    """P2's chance: that the first migrant, down ``down_s``, is back before the classic round its leave
    starts has completed. The ``others`` join that round at their next heartbeat, and they heartbeat
    together: a classic member's heartbeat timer starts when its SyncGroup answers, and a round's
    answers reach every member at once. So the round waits one draw of the heartbeat's phase, taken
    as uniform. Measured: five reruns of scale-out-in's migration in which the migrant came back
    late, its two others gave back their partitions within 0.01-0.07 s of each other, 0.11-0.51 s
    after the leave; the independent phases this took before priced the chance at 1 - (down/hb)^2."""
    return 1.0 - min(1.0, down_s / heartbeat_s) if others and heartbeat_s > 0 else 0.0


def mixed_phase_rounds(members: list[Member], owned: Assignment, counts: dict[str, int], classic: str,
                       remote: str, down_s: float, first_lands_first: bool = False) -> list[tuple[SimRebalance, str]]:
    """The rebalances of migrating ``members`` (in rollout order) from ``owned`` (the classic
    layout now), each with the protocol kind its handoffs are priced by. The upgrade is taken to go
    through (R0's refusals are the plan's to hold back, not to price): the group is one whose stored
    assignments carry no user data, as the Java client's never do and a librdkafka cooperative-sticky
    group's do (readiness ``sticky_user_data``, blocking). ``first_lands_first``: the first migrant is
    back before its leave's classic round completes (P2)."""
    kind = ASSIGNORS[classic].rebalance_protocol
    group = MixedGroup(classic, tuple(MixedMember(m, kind) for m in members),
                       {m.member_id: set(owned.get(m.member_id, ())) for m in members}, epoch=1, user_data=False)
    rounds: list[tuple[SimRebalance, str]] = []
    left: Assignment = {}  # partitions of members gone since the last bump
    for i, m in enumerate(members):
        migrant = MixedMember(m, CONSUMER, remote.split(":", 1)[1])
        for at, change in ((i * 2, Leave(m.member_id, settles=not (i == 0 and first_lands_first))),
                           (i * 2 + 1, Join(migrant))):
            in_place = isinstance(change, Join) and replaced(group, migrant) is not None  # R3: a static restart
            then, bump = step(group, change, counts)
            if isinstance(change, Join) and migrant not in then.members:
                raise ValueError(f"the broker refuses {m.member_id}'s upgrade (R0): a mixed phase is priced only "
                                 "for a group it converts")
            if isinstance(change, Leave) and m.member_id in group.target and m.member_id not in then.target:
                left[m.member_id] = group.target[m.member_id]
            if bump is not None:
                rounds += _rebalance(bump, then, left, down_s, at)
                left = {}
            elif in_place:  # it took its old self's place and partitions; they wait for it, nothing else moves
                back = tuple(SimHandoff(tp, "bounce", False, down_s, m.member_id)
                             for tp in sorted(then.target[m.member_id]))
                rounds.append((SimRebalance(at, "protocol_migration", back, group_rebalance=False), CONSUMER))
            group = then
    return rounds


def mixed_phase_cost(members: list[Member], owned: Assignment, counts: dict[str, int], classic: str, remote: str,
                     down_s: float, p2: float, fitted: Fitted, commit_on_revoke: bool) -> Priced:
    """What the mixed phase costs: its rounds priced by the group's fitted cost model, each handoff
    under the protocol kind of the member that takes it. Duplicates and pause are the expectation
    over P2 (chance ``p2``: ``lands_first``) or not; the counts are the likelier path's."""
    paths = []
    for p2_path, weight in [(path, w) for path, w in ((True, p2), (False, 1.0 - p2)) if w > 0]:
        rounds = mixed_phase_rounds(members, owned, counts, classic, remote, down_s, p2_path)
        parts = [price([rebalance], fitted, kind, commit_on_revoke, 0) for rebalance, kind in rounds]
        paths.append((weight, Priced(len({r.at_ms for r, _ in rounds if r.group_rebalance}),
                                     sum(p.handoffs for p in parts), sum(p.partitions_moved for p in parts),
                                     sum(p.duplicates for p in parts), sum(p.pause_s for p in parts))))
    likelier = max(paths, key=lambda wp: wp[0])[1]
    return replace(likelier, duplicates=sum(w * p.duplicates for w, p in paths),
                   pause_s=sum(w * p.pause_s for w, p in paths))


def layout_at(intervals: list[dict], at_ms: int | None = None) -> Assignment:
    """Who held what at ``at_ms``; None: now (each partition's latest ownership interval)."""
    held: dict[tuple[str, int], dict] = {}
    for i in intervals:
        tp = (i["topic"], int(i["partition"]))
        held_then = at_ms is None or (i["assigned_ms"] <= at_ms and (i["released_ms"] or at_ms + 1) > at_ms)
        if not held_then:
            continue
        if tp not in held or i["assigned_ms"] > held[tp]["assigned_ms"]:
            held[tp] = i
    layout: Assignment = {}
    for tp, i in held.items():
        layout.setdefault(i["agent_id"], set()).add(tp)
    return layout
