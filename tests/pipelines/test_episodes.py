"""Episode clustering and causes, on the pure functions (no Spark): one fleet per cause."""
from __future__ import annotations

import pytest

from pipelines.gold.episodes import clusters
from pipelines.gold.group_pass import rebalance_bodies
from lens_scenarios.synthetic import P0, P1, P2, Fleet
from tests.support.fleets import busy_fleet, every_cause
from tests.support.reference_ownership import gold_of_group

FLEETS = every_cause()


@pytest.mark.parametrize("cause", sorted(FLEETS))
def test_last_episode_gets_its_cause(cause):
    events = FLEETS[cause].events
    _, handoffs, episodes, _ = gold_of_group(events, gap_s=10.0)
    assert [e["cause"] for e in episodes] == ["start", cause]
    assert all(h["episode_id"] == episodes[-1]["episode_id"] for h in handoffs)


def test_poll_exceeded_loss_has_exact_duplicates():
    events = FLEETS["poll_interval_exceeded"].events
    _, handoffs, _, _ = gold_of_group(events, gap_s=10.0)
    lost = next(h for h in handoffs if h["release_kind"] == "lost")
    # m2 processed to 9 and lost P1; m1 restarted it at 8: records 8 and 9 were read twice.
    assert (lost["duplicates"], lost["duplicates_upper"]) == (2, 2)


def test_gap_splits_and_late_event_merges():
    fleet = Fleet()
    m1 = fleet.member("m1")
    m1.at(0).joins().assigned(P0).at(25_000).revokes(P0).at(26_000).assigned(P0)
    assert len(clusters(rebalance_bodies(fleet.events), gap_s=10.0)) == 2
    m1.at(8_000).state("stable", "late note")  # late events bridging the two
    m1.at(16_000).state("stable", "another")
    assert len(clusters(rebalance_bodies(fleet.events), gap_s=10.0)) == 1


def test_busy_fleet_gets_one_episode_and_cause_per_rebalance():
    _, handoffs, episodes, _ = gold_of_group(busy_fleet().events, gap_s=10.0)
    assert [e["cause"] for e in episodes] == ["start", "restart", "crash", "scale_out", "subscription_change"]
    by_episode = {e["episode_id"]: e for e in episodes}
    for h in handoffs:
        assert h["cause"] == by_episode[h["episode_id"]]["cause"], h["handoff_id"]
    assert sum(e["partitions_moved"] for e in episodes) == len(handoffs)
    crashed = [h for h in handoffs if h["release_kind"] == "crash"]
    assert len(crashed) == 1 and crashed[0]["cause"] == "crash"


def test_a_stall_reported_after_its_return_still_explains_the_return():
    """librdkafka can serve the lost callback, the rejoin and the new assignment inside the poll that
    then returns the _MAX_POLL_EXCEEDED error (a CI run of slow-processing: the error 80 ms after the
    new assignment). The kick-out's round and the return's round are both the stall's."""
    fleet = Fleet(group="g-late-report")
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0, generation=1).fetches(P0, 0)
    m2.at(0).joins().assigned(P1, generation=1).fetches(P1, 0)
    m1.at(5_000).processes(P0, upto=9)
    m2.at(5_000).processes(P1, upto=9)  # then stalls
    m1.at(12_000).revokes(P0).at(12_010).assigned(P0, P1, generation=2).fetches(P0, 10).fetches(P1, 8)
    m2.at(20_000).loses(P1).state("joining", "lost callback done")
    m1.at(20_020).revokes(P0, P1).at(20_030).assigned(P0, generation=3).fetches(P0, 20)
    m2.at(20_030).assigned(P1, generation=3).at(20_110).exceeds_poll_interval().at(20_120).fetches(P1, 15)
    _, handoffs, episodes, _ = gold_of_group(fleet.events, gap_s=5.0)
    moved = sorted((h["generation"], h["partition"], h["cause"]) for h in handoffs if h["generation"] > 1)
    assert moved == [(2, 0, "poll_interval_exceeded"), (2, 1, "poll_interval_exceeded"),
                     (3, 0, "poll_interval_exceeded"), (3, 1, "poll_interval_exceeded")]
    assert [e["cause"] for e in episodes] == ["start", "poll_interval_exceeded", "poll_interval_exceeded"]


def test_a_leave_whose_round_was_aborted_explains_the_round_that_completed():
    """Two members scaled in moments apart (scale-out-in under eager roundrobin, on a loaded CI): m3's
    leave opens generation 2, m2 revokes for it and then closes before generation 2 completes, still
    reporting generation 1. Its leave aborts generation 2 (no member is ever assigned in it) and
    generation 3 moves its partition: both leaves' cause, though no trigger reports generation 3."""
    fleet = Fleet(group="g-aborted-round")
    m1, m2, m3 = fleet.member("m1"), fleet.member("m2"), fleet.member("m3")
    for m, p in ((m1, P0), (m2, P1), (m3, P2)):
        m.at(0).joins().assigned(p, generation=1).fetches(p, 0).at(5_000).processes(p, upto=9)
    m3.at(10_000).leaves().revokes(P2)
    m1.at(10_010).revokes(P0)
    m2.at(10_012).revokes(P1).at(10_050).leaves()
    m1.at(10_400).assigned(P0, P1, P2, generation=3).fetches(P0, 10).fetches(P1, 8).fetches(P2, 10)
    _, handoffs, episodes, _ = gold_of_group(fleet.events, gap_s=10.0)
    moved = sorted((h["partition"], h["prev_agent_id"], h["generation"], h["cause"]) for h in handoffs)
    assert moved == [(0, m1.agent_id, 3, "scale_in"), (1, m2.agent_id, 3, "scale_in"), (2, m3.agent_id, 3, "scale_in")]
    assert [e["cause"] for e in episodes] == ["scale_in"]
