"""Properties every assignor model must have, over random groups.

hypothesis drives the groups through ``st.randoms`` (its choices, so a failure shrinks to a
small group and is replayed from hypothesis's database). A group
has 1-6 members with identical or random subscriptions, static members sometimes,
topics of 1-8 partitions, sometimes a subscribed topic that does not exist, and a
previous assignment that may include departed members, a deleted topic and unowned
partitions.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.simulator.assignors import ASSIGNORS, assign
from pipelines.simulator.group import Assignment, Member, valid_claims
from pipelines.simulator.handoff import classic_cooperative_rounds, handoff, owners

EXAMPLES = settings(max_examples=200, deadline=None)
RANDOMS = st.randoms(use_true_random=False)
BALANCED_WITH_IDENTICAL_SUBSCRIPTIONS = ["classic:roundrobin", "classic:cooperative-sticky", "consumer:uniform"]
BALANCED_PER_TOPIC = ["classic:range", "consumer:range"]
STICKY = [name for name, model in ASSIGNORS.items() if model.sticky]


@dataclass(frozen=True)
class Case:
    members: list[Member]
    partitions: dict[str, int]
    previous: Assignment


def random_case(rng: random.Random, identical: bool | None = None) -> Case:
    partitions = {f"topic-{i}": rng.randint(1, 8) for i in range(rng.randint(1, 4))}
    names = list(partitions) + ["missing-topic"] * (rng.random() < 0.2)
    if identical is None:
        identical = rng.random() < 0.5
    shared = frozenset(rng.sample(names, rng.randint(1, len(names))))
    static = rng.random() < 0.3

    def member(i: int) -> Member:
        """Member ids are random (their order is what the assignors sort by) and unique (the suffix)."""
        subscription = shared if identical else frozenset(rng.sample(names, rng.randint(1, len(names))))
        return Member(f"client-{rng.getrandbits(32):08x}-{i}", f"instance-{i}" if static else None, subscription)

    members = [member(i) for i in range(rng.randint(1, 6))]
    earlier = rng.sample(members, rng.randint(0, len(members))) + [member(90 + i) for i in range(rng.randint(0, 2))]
    owned = list(partitions.items()) + [("deleted-topic", 2)]
    previous: Assignment = {m.member_id: set() for m in earlier}
    for topic, count in owned:
        for p in range(count):
            if earlier and rng.random() < 0.8:
                previous[rng.choice(earlier).member_id].add((topic, p))
    return Case(members, partitions, previous)


def subscribed_partitions(case: Case) -> set[tuple[str, int]]:
    return {(t, p) for t, count in case.partitions.items() for p in range(count)
            if any(t in m.subscription for m in case.members)}


def minimal_moves(case: Case) -> int:
    """Fewest owned partitions that must change owner for a balanced result (identical subscriptions):
    the members owning most get the ``P % N`` larger shares."""
    claims = valid_claims(case.members, case.partitions, case.previous)
    quota, extra = divmod(len(subscribed_partitions(case)), len(case.members))
    owned = sorted((len(tps) for tps in claims.values()), reverse=True)
    return sum(max(0, size - quota - (i < extra)) for i, size in enumerate(owned))


def moves(case: Case, result: Assignment) -> int:
    claims = valid_claims(case.members, case.partitions, case.previous)
    return sum(tp not in result[m] for m, tps in claims.items() for tp in tps)


@pytest.mark.parametrize("assignor", list(ASSIGNORS))
@EXAMPLES
@given(rng=RANDOMS)
def test_each_subscribed_partition_goes_to_exactly_one_subscriber(assignor, rng):
    case = random_case(rng)
    result = assign(assignor, case.members, case.partitions, case.previous)
    assert set(result) == {m.member_id for m in case.members}
    given = [tp for tps in result.values() for tp in tps]
    assert len(given) == len(set(given)) and set(given) == subscribed_partitions(case)
    subscriptions = {m.member_id: m.subscription for m in case.members}
    assert all(t in subscriptions[m] for m, tps in result.items() for t, _ in tps)


@pytest.mark.parametrize("assignor", BALANCED_WITH_IDENTICAL_SUBSCRIPTIONS)
@EXAMPLES
@given(rng=RANDOMS)
def test_identical_subscriptions_give_a_balanced_assignment(assignor, rng):
    case = random_case(rng, identical=True)
    sizes = [len(tps) for tps in assign(assignor, case.members, case.partitions, case.previous).values()]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("assignor", BALANCED_PER_TOPIC)
@EXAMPLES
@given(rng=RANDOMS)
def test_range_balances_each_topic_over_its_subscribers(assignor, rng):
    case = random_case(rng)
    result = assign(assignor, case.members, case.partitions, case.previous)
    for topic in case.partitions:
        sizes = [sum(t == topic for t, _ in result[m.member_id]) for m in case.members
                 if topic in m.subscription]
        assert not sizes or max(sizes) - min(sizes) <= 1, topic


@pytest.mark.parametrize("assignor", STICKY)
@EXAMPLES
@given(rng=RANDOMS)
def test_sticky_assignors_move_no_more_than_balance_needs(assignor, rng):
    case = random_case(rng, identical=True)
    result = assign(assignor, case.members, case.partitions, case.previous)
    assert moves(case, result) == minimal_moves(case)


@pytest.mark.parametrize("assignor", list(ASSIGNORS))
@EXAMPLES
@given(rng=RANDOMS)
def test_eager_revokes_everything_and_cooperative_only_what_changes_owner(assignor, rng):
    protocol = ASSIGNORS[assignor].rebalance_protocol
    case = random_case(rng)
    new = assign(assignor, case.members, case.partitions, case.previous)
    result = handoff(case.previous, new, protocol)
    before, after = owners(case.previous), owners(new)
    assert result.moved == {tp: (before[tp], after[tp]) for tp in before.keys() & after.keys()
                            if before[tp] != after[tp]}
    if protocol == "eager":
        assert result.revoked == case.previous and not result.second_round
    else:
        assert all(result.revoked[m] == tps - new.get(m, set()) for m, tps in case.previous.items())
        assert result.second_round == {tp for tp, (src, _) in result.moved.items() if src in new}


@EXAMPLES
@given(rng=RANDOMS)
def test_classic_cooperative_rounds_end_on_the_assignors_result(rng):
    case = random_case(rng)
    rounds = classic_cooperative_rounds("classic:cooperative-sticky", case.members, case.partitions,
                                        case.previous)
    settled = rounds[-1]
    assert settled == assign("classic:cooperative-sticky", case.members, case.partitions, settled)
