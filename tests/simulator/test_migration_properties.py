"""Properties of the KIP-848 mixed-phase model (``mixed_phase.step``) and of the staged migration
priced through it (``migration.mixed_phase_rounds``, ``mixed_phase_cost``), over generated group
histories: members joining and leaving between rounds, static and dynamic, restarted in place,
expired, back before their leave's round completed (P2), on either protocol, under every policy.

A history is built the way a fleet makes one: a classic group forms, changes between rounds, and
the layout the migration starts from is then read as telemetry gives it (``migration.layout_at``
over the ownership intervals: a live member that holds nothing, a partition held by a member that
has left). A fault of this class (a member the layout did not hold, looked up: issue 51's KeyError
on a cooperative-sticky rolling restart) is found here, shrunk to its smallest history.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.simulator.assignors import ASSIGNORS
from pipelines.simulator.cost_model import Fitted
from pipelines.simulator.group import Assignment, Member, TopicPartition
from pipelines.simulator.migration import layout_at, mixed_phase_cost, mixed_phase_rounds
from pipelines.simulator.mixed_phase import (MIGRATION_POLICIES, Bump, Join, Leave, MixedGroup, MixedMember,
                                             replaced, step, upgrade_allowed)

pytestmark = pytest.mark.fast

EXAMPLES = settings(max_examples=300, deadline=None)
CLASSIC = sorted(name for name in ASSIGNORS if name.startswith("classic:"))
REMOTE = sorted(name for name in ASSIGNORS if name.startswith("consumer:"))


@dataclass(frozen=True)
class History:
    """A group's life before its migration: its classic assignor, topics, the changes it went through
    (each at its own round) and the ownership intervals they left."""

    classic: str
    counts: dict[str, int]
    group: MixedGroup  # as it runs now
    intervals: list[dict]  # what gold's partition_ownership holds: one row per ownership


def _member(draw, index: int, topics: list[str], static: bool) -> Member:
    subscription = frozenset(draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)))
    return Member(f"m{index}-{draw(st.integers(0, 99)):02d}", f"i{index}" if static else None, subscription)


@st.composite
def topic_counts(draw) -> dict[str, int]:
    return {f"t{i}": draw(st.integers(1, 6)) for i in range(draw(st.integers(1, 2)))}


def _intervals(intervals: list[dict], before: Assignment, after: Assignment, at_ms: int) -> None:
    """Close the ownerships a round ended and open the ones it started (an eager member given its
    own partitions back keeps its interval: the layout, not the handoffs, is what is read here)."""
    for member, tps in before.items():
        for tp in tps - after.get(member, set()):
            row = next(i for i in intervals if i["agent_id"] == member and (i["topic"], i["partition"]) == tp
                       and i["released_ms"] is None)
            row["released_ms"] = at_ms
    for member, tps in after.items():
        for topic, partition in sorted(tps - before.get(member, set())):
            intervals.append({"agent_id": member, "topic": topic, "partition": partition, "assigned_ms": at_ms + 1,
                              "released_ms": None})


@st.composite
def histories(draw) -> History:
    """A classic group that formed and then changed round by round: dynamic members joining and leaving,
    static ones restarted in place (a new member id, the same instance id) or expiring."""
    classic, counts = draw(st.sampled_from(CLASSIC)), draw(topic_counts())
    topics, kind = sorted(counts), ASSIGNORS[classic].rebalance_protocol
    founders = [_member(draw, i, topics, draw(st.booleans())) for i in range(draw(st.integers(1, 4)))]
    group = MixedGroup(classic, (), {}, epoch=0)
    intervals: list[dict] = []
    changes = [Join(MixedMember(m, kind)) for m in founders]
    for n in range(draw(st.integers(0, 6))):
        live = [m.member for m in group.members] + [c.member.member for c in changes if isinstance(c, Join)]
        action = draw(st.sampled_from(["join", "leave", "restart", "expire"]))
        if action == "join" or not live:
            changes.append(Join(MixedMember(_member(draw, 10 + n, topics, draw(st.booleans())), kind)))
            continue
        who = draw(st.sampled_from(live))
        if action == "restart" and who.group_instance_id is not None:
            changes.append(Join(MixedMember(Member(f"{who.member_id}r{n}", who.group_instance_id, who.subscription),
                                            kind)))
        else:
            changes.append(Leave(who.member_id, expired=action == "expire"))
    for at, change in enumerate(changes):
        then, _ = step(group, change, counts)
        _intervals(intervals, group.target, then.target, at * 1_000)
        group = then
    return History(classic, counts, group, intervals)


def _rollout(h: History, order: list[int]) -> tuple[list[Member], Assignment]:
    """The live members in a drawn rollout order, and who holds what as telemetry says it."""
    live = [m.member for m in h.group.members]
    members = [live[i] for i in order if i < len(live)]
    members += [m for m in live if m not in members]
    return members, layout_at(h.intervals)


def _fitted() -> Fitted:
    return Fitted(rate={}, uncommitted_window_s=0.5, window_observations=1, sampled_window_s=0.5, kind="eager",
                  move_pause_s={"eager": (0.6, 0.07), "cooperative": (0.6, 1.1), "consumer": (0.5, 0.5)},
                  same_owner_pause_s=0.07, pause_observations=1, return_overhead_s=0.1, commit_in_revoke_s=0.02,
                  crash_duplicates=0.0, crash_overhead_s=0.0, lost_duplicates=0.0, lost_pause_s=0.0, round_ms=500)


def _partitions(counts: dict[str, int]) -> set[TopicPartition]:
    return {(t, p) for t, n in counts.items() for p in range(n)}


@EXAMPLES
@given(h=histories(), remote=st.sampled_from(REMOTE), order=st.permutations(range(8)),
       down_s=st.floats(0.0, 5.0), p2=st.booleans())
def test_a_migration_from_any_history_prices_every_migrant_and_only_real_partitions(h, remote, order, down_s, p2):
    members, owned = _rollout(h, order)
    rounds = mixed_phase_rounds(members, owned, h.counts, h.classic, remote, down_s, p2)
    ids = {m.member_id for m in members}
    handoffs = [hand for r, _ in rounds for hand in r.handoffs]
    assert {hand.partition for hand in handoffs} <= _partitions(h.counts)
    assert {hand.to for hand in handoffs} <= ids  # every handoff goes to a member of the group
    assert all(kind in ("eager", "cooperative", "consumer") for _, kind in rounds)
    assert len({r.at_ms for r, _ in rounds if r.group_rebalance}) <= 2 * len(members)
    if all(m.group_instance_id is not None for m in members):
        # static restarts with the same topics replace their old selves: nothing moves, each waits for its own
        assert not any(r.group_rebalance for r, _ in rounds)
        assert sorted((hand.to, hand.partition) for hand in handoffs) == sorted(
            (m.member_id, tp) for m in members for tp in owned.get(m.member_id, ()))


@EXAMPLES
@given(h=histories(), remote=st.sampled_from(REMOTE), order=st.permutations(range(8)),
       down_s=st.floats(0.0, 5.0), p2=st.floats(0.0, 1.0), commits=st.booleans())
def test_a_mixed_phase_cost_is_the_expectation_of_its_two_paths(h, remote, order, down_s, p2, commits):
    members, owned = _rollout(h, order)
    fitted = _fitted()
    priced = mixed_phase_cost(members, owned, h.counts, h.classic, remote, down_s, p2, fitted, commits)
    paths = [mixed_phase_cost(members, owned, h.counts, h.classic, remote, down_s, chance, fitted, commits)
             for chance in (0.0, 1.0)]
    assert all(math.isfinite(v) and v >= 0 for v in (priced.pause_s, priced.duplicates))
    low, high = sorted(p.pause_s for p in paths)
    assert low - 1e-9 <= priced.pause_s <= high + 1e-9


def _check_bump(before: MixedGroup, after: MixedGroup, bump: Bump, counts: dict[str, int]) -> None:
    ids = [m.member.member_id for m in after.members]
    assert bump.epoch == before.epoch + 1 == after.epoch
    assert set(bump.target) == set(ids) and after.target == bump.target
    given_out = [tp for tps in bump.target.values() for tp in tps]
    subscribed = {tp for tp in _partitions(counts) if any(tp[0] in m.member.subscription for m in after.members)}
    assert len(given_out) == len(set(given_out)) and set(given_out) == subscribed
    kinds = {m.member.member_id: m.kind for m in after.members}
    for member, callbacks in bump.revokes.items():
        held = before.target.get(member, set())
        assert member in kinds and all(callbacks)
        if kinds[member] == "eager":
            assert set().union(*callbacks) <= held | bump.target[member]
        else:  # cooperative and consumer-protocol members give back what moves away, once
            assert callbacks == tuple(s for s in (frozenset(held - bump.target[member]),) if s)


def _mixed_change(draw, group: MixedGroup, topics: list[str], n: int) -> Join | Leave:
    """A change a group in migration may see: a join on either protocol (a static one may replace a
    member), a dynamic leave that settles or not (P2), a static member closing or expiring."""
    kind = ASSIGNORS[group.classic_assignor].rebalance_protocol
    ids = [m.member.member_id for m in group.members]
    if not ids or draw(st.booleans()):
        protocol = draw(st.sampled_from([kind, "consumer"]))
        remote = draw(st.sampled_from([None, "uniform", "range"])) if protocol == "consumer" else None
        return Join(MixedMember(_member(draw, 50 + n, topics, draw(st.booleans())), protocol, remote))
    return Leave(draw(st.sampled_from(ids)), expired=draw(st.booleans()), settles=draw(st.booleans()))


@EXAMPLES
@given(data=st.data(), h=histories(), policy=st.sampled_from(sorted(MIGRATION_POLICIES)),
       user_data=st.sampled_from([None, True, False]))
def test_every_change_to_a_mixed_group_keeps_it_whole(data, h, policy, user_data):
    """Each step: member ids unique, a target only of members, every bump's target a partition of the
    subscribed partitions, revokes only of what a member held (eager: and the partitions its second
    Join/Sync takes back), a joiner either in the group or refused by R0 with nothing changed."""
    group = MixedGroup(h.classic, h.group.members, h.group.target, h.group.epoch, policy=policy, user_data=user_data)
    for n in range(data.draw(st.integers(1, 8))):
        change = _mixed_change(data.draw, group, sorted(h.counts), n)
        then, bump = step(group, change, h.counts)
        ids = [m.member.member_id for m in then.members]
        assert len(ids) == len(set(ids)) and set(then.target) <= set(ids)
        assert then.converted or all(m.kind != "consumer" for m in then.members)
        if bump is not None:
            _check_bump(group, then, bump, h.counts)
        elif isinstance(change, Join) and change.member not in then.members:
            assert then == group and change.member.kind == "consumer" and not group.converted
            assert not upgrade_allowed(group) and group.members  # R0 only: the joiner dies
        elif isinstance(change, Join) and replaced(group, change.member) is not None:
            old = replaced(group, change.member)
            assert then.target.get(change.member.member.member_id, set()) == group.target.get(old.member.member_id,
                                                                                           set())
        group = then
