"""A KIP-848 group holding classic and consumer-protocol members, as the Kafka 4.2.0 broker runs it:
one membership change in, the group's next state and its epoch bump (if any) out.

The rules are the migration study's (docs/measured.md, "The KIP-848 migration"), each read from
the 4.2.0 group coordinator and checked on the embedded broker (tests/e2e/test_mixed_phase.py):
- R0: a consumer-protocol member joining a non-empty classic group converts it only if the
  migration policy allows upgrades and no stored assignment carries user data (the 4.2.0
  coordinator: "userData from a custom assignor would be lost"; librdkafka's cooperative-sticky
  writes some, the Java client's assignors none: ``MixedGroup.user_data``); otherwise the joiner
  dies (GROUP_ID_NOT_FOUND is fatal) and nothing moves. An empty classic group is simply
  recreated as a consumer group.
- R1: once converted, one broker-side assignor computes every target: the consumer-protocol
  members' most common ``group.remote.assignor``, else uniform; classic members vote for nothing.
- R2: the conversion moves nothing: the stored classic assignment is the target, the classic
  generation the epoch.
- R3: a static member restarted on the other protocol with the same topics replaces its old self:
  no epoch bump, it inherits its old partitions (both ways; back to classic this is downgrade path B).
- R4: a dynamic join or leave of a converted group bumps the epoch; the target comes from the
  previous target through R1's assignor (uniform: the 4.2.0 sticky quota rule).
- R6: at each bump every eager classic member revokes everything (its heartbeat is answered
  REBALANCE_IN_PROGRESS whether its target changed or not) and gets back what it keeps plus the free
  partitions one Join/Sync later; a partition it gains that another member still held costs it one
  more Join/Sync, so one more full revoke. Cooperative classic and consumer-protocol members revoke
  what moves away from them.
- R8: the last consumer-protocol member leaving (dynamically) downgrades the group: a full classic
  rebalance from the stored target, under the classic assignor.
A classic group's own changes are classic rebalances (the classic models), so a dynamic member's
migration is a classic scale-in, then R2 and R4 (R5), unless:
- P2: its join lands before that scale-in's round has completed (the others join it at their next
  heartbeat). The round is never finished: the upgrade fails the pending joins and converts the
  group from the stored assignment minus the leaver's, at the classic generation, then R4
  (scale-out-in under roundrobin, members down 0.5 s: one bump, the migrant got its own
  partitions back).
Not modelled: when each handoff happens (R7: the cost model's). Pure and explicit; the staged plan
prices its rounds through ``pipelines.simulator.migration``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Literal

from pipelines.simulator.assignors import ASSIGNORS, assign
from pipelines.simulator.group import Assignment, Member, TopicPartition

Kind = Literal["eager", "cooperative", "consumer"]  # a member's protocol, as far as revoking goes
Revokes = dict[str, tuple[frozenset[TopicPartition], ...]]  # member id -> its revoke callbacks, in order

# group.consumer.migration.policy -> (upgrade allowed, downgrade allowed); 4.2.0's default is bidirectional
MIGRATION_POLICIES: dict[str, tuple[bool, bool]] = {
    "bidirectional": (True, True), "upgrade": (True, False), "downgrade": (False, True), "disabled": (False, False)}
# classic assignors whose stored assignments carry user data from the second generation on under
# librdkafka (P1); the Java client's assignors put none in an assignment (kafka-clients 4.2.0: every
# assignor's Assignment is built from its partitions alone; cooperative-sticky's generation rides in
# the subscription, which the conversion does not keep)
USER_DATA_ASSIGNORS = frozenset({"classic:cooperative-sticky"})
DEFAULT_REMOTE_ASSIGNOR = "uniform"  # group.consumer.assignors[0]


@dataclass(frozen=True)
class MixedMember:
    member: Member
    kind: Kind
    remote_assignor: str | None = None  # group.remote.assignor of a consumer-protocol member; None: the broker's


@dataclass(frozen=True)
class MixedGroup:
    classic_assignor: str  # an ASSIGNORS ``classic:`` name: the classic members' vote, run while classic
    members: tuple[MixedMember, ...]
    target: Assignment  # classic: the stored assignment; converted: the target (what members hold once settled)
    epoch: int  # the classic generation, then the group epoch (R2: one scale)
    converted: bool = False
    policy: str = "bidirectional"
    # whether the classic members' stored assignments carry assignor user data (R0); None: as librdkafka's (P1)
    user_data: bool | None = None


@dataclass(frozen=True)
class Bump:
    epoch: int
    rule: str  # what made it: classic (a classic group's rebalance), R4 (a converted group's), R8 (the downgrade)
    assignor: str
    target: Assignment
    revokes: Revokes  # the members that stay, non-empty callbacks only


@dataclass(frozen=True)
class Join:
    member: MixedMember


@dataclass(frozen=True)
class Leave:
    """A member closing: dynamic ones leave the group; a static one keeps its place (classic: no
    LeaveGroup; consumer: epoch -2, a temporary leave) until replaced or ``expired``."""

    member_id: str
    expired: bool = False
    settles: bool = True  # a classic group's round for it completes before the next change (else P2)


Change = Join | Leave


def remote_assignor(members: tuple[MixedMember, ...]) -> str:
    """R1 as an ASSIGNORS name. Ties between equally common assignors go by name (the broker's
    HashMap order: unconfirmed)."""
    votes = Counter(m.remote_assignor for m in members if m.kind == "consumer" and m.remote_assignor)
    if not votes:
        return f"consumer:{DEFAULT_REMOTE_ASSIGNOR}"
    top = max(votes.values())
    return f"consumer:{min(a for a, n in votes.items() if n == top)}"


def classic_kind(classic_assignor: str) -> Kind:
    return ASSIGNORS[classic_assignor].rebalance_protocol


def revokes_at_bump(kind: Kind, held: frozenset[TopicPartition], target: frozenset[TopicPartition],
                    held_by_others: frozenset[TopicPartition]) -> tuple[frozenset[TopicPartition], ...]:
    """R6: what one staying member revokes at an epoch bump of a converted group, callback by callback."""
    if kind != "eager":
        return tuple(s for s in (held - target,) if s)
    granted = (held & target) | (target - held - held_by_others)  # keep + free, at its first Join/Sync
    second = (granted,) if target - granted else ()  # it gains a partition another still held: one more round
    return tuple(s for s in ((held,) + second) if s)


def _classic_revokes(kind: Kind, before: Assignment, target: Assignment) -> Revokes:
    """A classic rebalance: eager members revoke everything, cooperative ones what they lose."""
    out = {m: (frozenset(tps),) if kind == "eager" else (frozenset(tps - target.get(m, set())),)
           for m, tps in before.items() if m in target}
    return {m: tuple(s for s in r if s) for m, r in out.items()}


def _classic_rebalance(group: MixedGroup, members: tuple[MixedMember, ...], counts: dict[str, int],
                       rule: str) -> tuple[MixedGroup, Bump]:
    plain = [m.member for m in members]
    previous = group.target if ASSIGNORS[group.classic_assignor].sticky else None
    target = assign(group.classic_assignor, plain, counts, previous)
    before = {m.member.member_id: group.target.get(m.member.member_id, set()) for m in members}
    bump = Bump(group.epoch + 1, rule, group.classic_assignor, target,
                _classic_revokes(classic_kind(group.classic_assignor), before, target))
    return replace(group, members=members, target=target, epoch=bump.epoch, converted=False), bump


def _consumer_bump(group: MixedGroup, members: tuple[MixedMember, ...],
                   counts: dict[str, int]) -> tuple[MixedGroup, Bump]:
    """R4 with R6's revokes."""
    assignor = remote_assignor(members)
    target = assign(assignor, [m.member for m in members], counts, group.target)
    held = {m.member.member_id: frozenset(group.target.get(m.member.member_id, ())) for m in members}
    revokes = {}
    for m in members:
        me = m.member.member_id
        others = frozenset().union(*(tps for other, tps in held.items() if other != me))
        revokes[me] = revokes_at_bump(m.kind, held[me], frozenset(target[me]), others)
    bump = Bump(group.epoch + 1, "R4", assignor, target, revokes)
    return replace(group, members=members, target=target, epoch=bump.epoch), bump


def replaced(group: MixedGroup, joiner: MixedMember) -> MixedMember | None:
    """R3: the member a static joiner replaces (same group.instance.id), if any."""
    gid = joiner.member.group_instance_id
    return next((m for m in group.members if gid is not None and m.member.group_instance_id == gid), None)


def upgrade_allowed(group: MixedGroup) -> bool:
    """R0 for a non-empty classic group."""
    user_data = group.user_data if group.user_data is not None else \
        group.classic_assignor in USER_DATA_ASSIGNORS and group.epoch >= 2
    return MIGRATION_POLICIES[group.policy][0] and not user_data


def _replace(group: MixedGroup, old: MixedMember, joiner: MixedMember,
             counts: dict[str, int]) -> tuple[MixedGroup, Bump | None]:
    """R3: the joiner takes the old member's place and partitions; only a change of topics bumps."""
    members = tuple(joiner if m is old else m for m in group.members)
    consumer = any(m.kind == "consumer" for m in members)
    if consumer and not group.converted and not upgrade_allowed(group):
        return group, None  # R0: the joiner dies
    converted = consumer or (group.converted and not MIGRATION_POLICIES[group.policy][1])
    target = {(joiner.member.member_id if k == old.member.member_id else k): v for k, v in group.target.items()}
    moved = replace(group, members=members, target=target, converted=converted)
    if old.member.subscription == joiner.member.subscription:
        return moved, None
    if converted:
        return _consumer_bump(moved, members, counts)
    return _classic_rebalance(moved, members, counts, "classic")


def _join(group: MixedGroup, joiner: MixedMember, counts: dict[str, int]) -> tuple[MixedGroup, Bump | None]:
    old = replaced(group, joiner)
    if old is not None:
        return _replace(group, old, joiner, counts)
    members = (*group.members, joiner)
    if group.converted:
        return _consumer_bump(group, members, counts)
    if joiner.kind != "consumer":
        return _classic_rebalance(group, members, counts, "classic")
    if not group.members:  # an empty classic group is deleted and recreated: the offline path
        return _consumer_bump(replace(group, converted=True, target={}), members, counts)
    if not upgrade_allowed(group):
        return group, None  # R0: the joiner dies, the group stays classic
    return _consumer_bump(replace(group, converted=True), members, counts)  # R2 then R4


def _leave(group: MixedGroup, leave: Leave, counts: dict[str, int]) -> tuple[MixedGroup, Bump | None]:
    leaver = next((m for m in group.members if m.member.member_id == leave.member_id), None)
    if leaver is None or (leaver.member.group_instance_id is not None and not leave.expired):
        return group, None
    members = tuple(m for m in group.members if m is not leaver)
    if not group.converted and not leave.settles:  # P2: the next change completes (or replaces) its round
        return replace(group, members=members,
                       target={m: tps for m, tps in group.target.items() if m != leave.member_id}), None
    if not group.converted:
        return _classic_rebalance(group, members, counts, "classic")
    _, downgrade = MIGRATION_POLICIES[group.policy]
    if leaver.kind == "consumer" and members and downgrade and all(m.kind != "consumer" for m in members):
        return _classic_rebalance(group, members, counts, "R8")
    return _consumer_bump(group, members, counts)


def step(group: MixedGroup, change: Change, counts: dict[str, int]) -> tuple[MixedGroup, Bump | None]:
    """The group after ``change`` and the epoch bump it causes (None: nothing moves)."""
    if isinstance(change, Join):
        return _join(group, change.member, counts)
    return _leave(group, change, counts)
