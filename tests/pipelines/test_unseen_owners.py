"""Owners without the agent, in a small eager group computed by hand (``pipelines.gold.unseen``).

m1 and m2 run the agent; a plain member holds P3 from the start, leaves at 10 s (the others
hear of it at their next heartbeat and rebalance at 10.8 s: m2 takes P3 from offset 70, which
the plain member committed), and another plain member joins at 20 s and takes P3 at the
rebalance of 20.5 s. The agent sees neither plain member.
"""
from __future__ import annotations

import pytest

from lens_scenarios.synthetic import P0, P1, P2, P3, Fleet
from tests.support.reference_ownership import group_of

HEARTBEAT_MS = 3000  # the synthetic members' heartbeat.interval.ms


def _fleet() -> Fleet:
    fleet = Fleet(group="partial")
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins()
    m2.at(0).joins()
    m1.at(500).assigned(P0, P1, generation=1).fetches(P0, 0).fetches(P1, 0)
    m2.at(500).assigned(P2, generation=1).fetches(P2, 0)
    m1.at(5_000).processes(P0, upto=49).commits(P0, 50).processes(P1, upto=49).commits(P1, 50)
    m2.at(5_000).processes(P2, upto=49).commits(P2, 50)
    m1.at(10_800).revokes(P0, P1)
    m2.at(10_800).revokes(P2)
    m1.at(11_000).assigned(P0, P1, generation=2).fetches(P0, 50).fetches(P1, 50)
    m2.at(11_000).assigned(P2, P3, generation=2).fetches(P2, 50).fetches(P3, 70)
    m2.at(15_000).processes(P3, upto=119).commits(P3, 100)
    m1.at(20_500).revokes(P0, P1)
    m2.at(20_500).revokes(P2, P3)
    m1.at(20_700).assigned(P0, generation=3).fetches(P0, 50)
    m2.at(20_700).assigned(P1, P2, generation=3).fetches(P1, 50).fetches(P2, 50)
    m1.at(30_000).leaves().revokes(P0)
    m2.at(30_000).leaves().revokes(P1, P2)
    return fleet


@pytest.fixture(scope="module")
def gold():
    return group_of(_fleet().events, gap_s=10.0)


def test_a_partition_handed_to_a_member_without_the_agent_is_a_part_to_an_unseen_owner(gold):
    _, handoffs, _, _, _ = gold
    came, left = sorted((h for h in handoffs if h["partition"] == P3[1]), key=lambda h: h["assigned_ms"])
    # m2 took P3 at 11 s from the first plain member: only its own wait is known, from its assignment
    assert (came["unseen_owner"], came["prev_agent_id"], came["first_fetch_offset"]) == (True, None, 70)
    assert came["duplicates"] is None and came["pause_s"] is not None and came["pause_upper_s"] is None
    # m2 let P3 go at 20.5 s and no instrumented member took it: the plain joiner did
    assert (left["unseen_owner"], left["next_agent_id"], left["release_kind"]) == (True, None, "revoked")
    # m2 processed to 119 and committed 100: the unseen owner starts at that commit (19 re-read), and at
    # the least at the commit the revoke reported (here the same): bounded by what m2 reported
    assert (left["duplicates"], left["duplicates_upper"]) == (20, 20)
    assert left["pause_s"] is None and left["pause_upper_s"] is None  # nobody saw its first record
    assert left["cause"] == "unseen_member"  # no instrumented member triggered that rebalance


def test_no_instrumented_trigger_and_owners_without_the_agent_make_the_cause_unseen_member(gold):
    _, handoffs, _, _, _ = gold
    moved = {h["cause"] for h in handoffs if h["assigned_ms"] >= 11_000}
    assert moved == {"unseen_member"}


def test_a_next_owner_starting_past_everything_the_previous_one_did_spans_an_unseen_owner():
    fleet = Fleet(group="jump")
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0, generation=1).fetches(P0, 0)
    m1.at(5_000).processes(P0, upto=49).commits(P0, 50)
    m1.at(6_000).revokes(P0)
    m2.at(0).joins()
    m2.at(60_000).assigned(P0, generation=5).fetches(P0, 400)  # someone read 50..399 in between
    intervals, handoffs, _, _, _ = group_of(fleet.events, gap_s=10.0)
    parts = sorted(handoffs, key=lambda h: h["handoff_id"])
    assert [h["unseen_owner"] for h in parts] == [True, True]
    to_unseen, from_unseen = (next(h for h in parts if h["next_agent_id"] is None),
                              next(h for h in parts if h["prev_agent_id"] is None))
    assert to_unseen["duplicates"] == 0 and from_unseen["duplicates"] is None  # not priced across the unseen owner
    assert from_unseen["first_fetch_offset"] == 400


def test_coverage_is_the_instrumented_share_with_the_unseen_spans_estimated_from_the_rounds(gold):
    intervals, _, _, _, coverage = gold
    [hour] = coverage
    covered = (10_800 - 500) * 3 + (20_500 - 11_000) * 4 + (30_000 - 20_700) * 3  # m1, m2's intervals
    # P3 by the first plain member: from the first round's end to half a heartbeat before the round its
    # leave started (nobody instrumented triggered it); by the second: from 20.7 s to the group's end
    unseen = (10_800 - HEARTBEAT_MS // 2 - 500) + (30_000 - 20_700)
    assert hour["covered_s"] == pytest.approx(covered / 1000)
    assert hour["owned_s"] == pytest.approx((covered + unseen) / 1000)


def test_a_cooperative_round_slower_than_the_round_gap_is_no_unseen_owner():
    """An incremental (cooperative) follow-up round more than ``ROUND_GAP_MS`` after the revoke is
    the same rebalance: without an offset that moved past the previous owner, no unseen owner."""
    fleet = Fleet(group="coop")
    m1, m2 = (fleet.member(name, assignor="cooperative-sticky", rebalance_protocol="cooperative")
              for name in ("m1", "m2"))
    m1.at(0).joins().assigned(P0, P1, generation=1).fetches(P0, 0).fetches(P1, 0)
    m1.at(5_000).processes(P1, upto=49).commits(P1, 50)
    m2.at(10_000).joins()
    m1.at(10_500).assigned(generation=2).revokes(P1)
    m2.at(10_500).assigned(generation=2)
    m2.at(13_000).assigned(P1, generation=3).fetches(P1, 50)
    _, handoffs, _, _, _ = group_of(fleet.events, gap_s=10.0)
    [h] = [h for h in handoffs if h["partition"] == P1[1]]
    assert not h["unseen_owner"] and h["next_agent_id"] is not None and h["duplicates"] == 0


def test_a_partition_let_go_to_an_unseen_owner_early_is_bounded_from_what_its_owner_did():
    """An eager round soon after an assignment (a loaded machine in CI): m1 took P0, P1 and P3 at 0.5 s,
    and the round of 4 s gave P1 and P3 to a plain member (m2 holds P2). m1 handed out none of P1's
    records: nothing of its can be read again, exactly 0 duplicates, not unknown. It processed P3's
    20..29 and committed none: at least none and at most those 10 are read again."""
    fleet = Fleet(group="quick")
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins()
    m2.at(0).joins()
    m1.at(500).assigned(P0, P1, P3, generation=1).fetches(P0, 0).fetches(P3, 20)
    m2.at(500).assigned(P2, generation=1).fetches(P2, 0)
    m1.at(2_000).processes(P0, upto=9).processes(P3, upto=29)
    m1.at(4_000).revokes(P0, P1, P3)
    m2.at(4_000).revokes(P2)
    m1.at(4_200).assigned(P0, generation=2).fetches(P0, 10)
    m2.at(4_200).assigned(P2, generation=2).fetches(P2, 0)
    m1.at(6_000).processes(P0, upto=49).commits(P0, 50)
    m1.at(9_000).leaves().revokes(P0)
    m2.at(9_000).leaves().revokes(P2)
    _, handoffs, _, _, _ = group_of(fleet.events, gap_s=10.0)
    [nothing], [some] = ([h for h in handoffs if h["partition"] == p[1]] for p in (P1, P3))
    for left in (nothing, some):
        assert (left["unseen_owner"], left["next_agent_id"], left["release_kind"]) == (True, None, "revoked")
    assert (nothing["duplicates"], nothing["duplicates_upper"]) == (0, 0)
    assert (some["duplicates"], some["duplicates_upper"]) == (0, 10)
