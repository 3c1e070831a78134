"""The members' order as a draw: a candidate that restarts the members is priced over the ids they
would draw, not the ones the observed period happened to have."""
from __future__ import annotations

import itertools

from pipelines.simulator.member_ids import ORDER_DRAWS, draws
from pipelines.simulator.replay import Setup, replay
from tests.support.member_rows import member_row

# scale-out-in: m4 joins three members of two partitions each, then m1 and m4 are scaled away
SCALE_OUT_IN = [member_row("m1", 0, left=12_000, leave_cause="scale_in"), member_row("m2", 0), member_row("m3", 0),
                member_row("m4", 2_000, join_cause="scale_out", left=12_000, leave_cause="scale_in")]
PARTITIONS = {"orders": 6}
UNIFORM = Setup("consumer:uniform", False, session_timeout_ms=45_000, max_poll_interval_ms=300_000)


def _moves(renaming: dict[str, str] | None = None) -> int:
    return sum(h.moved for r in replay(SCALE_OUT_IN, PARTITIONS, UNIFORM, renaming=renaming) for h in r.handoffs)


def test_kip848_ids_are_drawn_the_same_way_on_every_run_the_observed_ones_first():
    ids = ["m1", "m2", "m3", "m4"]
    first, again = draws(ids, True, False, 6), draws(ids, True, False, 6)
    assert first == again and len(first) == ORDER_DRAWS
    assert first[0] == {i: i for i in ids}
    drawn = [set(r.values()) for r in first[1:]]
    assert all(len(d) == 4 and all(len(i) == 22 for i in d) for d in drawn)  # fresh base64 UUIDs, no two alike
    assert len({frozenset(d) for d in drawn}) == ORDER_DRAWS - 1


def test_ids_that_fix_the_order_are_not_drawn():
    distinct = [f"app-m{i}-1b4e28ba-2fa1-11d2-883f-0016d3cca427" for i in range(3)]
    assert len(draws(distinct, False, False, 6)) == 1  # classic ids ordered by their client.id prefixes
    assert len(draws(["m1", "m2"], True, True, 6)) == 1  # static: range orders by the user's instance ids
    assert len(draws(["m1", "m2"], True, False, 8_000)) == 1  # a large group: one replay
    assert len(draws(["m1", "m2"], True, False, 1_000)) == 8  # a middling one: as many as the budget allows


def test_classic_ids_sharing_a_client_id_keep_it_and_draw_the_uuid():
    shared = ["rdkafka-1b4e28ba-2fa1-11d2-883f-0016d3cca427", "rdkafka-6fa459ea-ee8a-3ca4-894e-db77e160355e"]
    renamed = draws(shared, False, False, 6)[1]
    assert all(new.startswith("rdkafka-") and len(new) == len(old) and new != old for old, new in renamed.items())


def test_the_expected_moves_weigh_which_equal_member_gives_the_joiner_its_partition():
    """Uniform takes m4's partition from one of m1-m3 in hash order of their ids: m1 with 1/3 chance,
    and then the scale-in moves one partition fewer. The observed ids make one of the two outcomes;
    the draws come near the expectation over every order, 3 + 2/3."""
    over_orders = [_moves(dict(zip(["m1", "m2", "m3", "m4"], order)))
                   for order in itertools.permutations(["a", "b", "c", "d"])]
    assert sorted(set(over_orders)) == [3, 4]
    expected = sum(over_orders) / len(over_orders)
    drawn = [_moves(r) for r in draws(["m1", "m2", "m3", "m4"], True, False, 6)]
    assert set(drawn) == {3, 4}
    assert abs(sum(drawn) / len(drawn) - expected) < 0.2  # 3 standard errors of 64 draws, and the id buckets' ties
