"""Handoff arithmetic on the pure functions: offsets are NEXT-to-read, last_processed is the last record."""
from __future__ import annotations

from pipelines.gold.handoffs import handoffs_of
from pipelines.gold.ownership import ownership_intervals
from lens_scenarios.synthetic import P0, Fleet


def _one_handoff(auto_commit_after_revoke: bool, next_starts_at: int) -> dict:
    fleet = Fleet()
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=99).commits(P0, 50)
    m1.at(2_000).revokes(P0, callback_ms=4.0)
    if auto_commit_after_revoke:
        m1.at(2_010).commits(P0, 100, mode="auto")   # librdkafka commits the stored offsets after the callback
    m2.at(2_500).joins().assigned(P0).at(2_750).fetches(P0, next_starts_at)
    [handoff] = handoffs_of(ownership_intervals(fleet.events))
    return handoff


def test_auto_commit_after_revoke_counts_as_committed():
    h = _one_handoff(auto_commit_after_revoke=True, next_starts_at=100)
    assert (h["committed_at_revoke"], h["duplicates_estimated"], h["duplicates_confirmed"]) == (100, 0, 0)
    assert h["unavailable_s"] == 0.75 and h["revoke_callback_ms"] == 4.0


def test_uncommitted_records_are_read_again():
    h = _one_handoff(auto_commit_after_revoke=False, next_starts_at=50)
    # processed 0..99, committed 50: records 50..99 are duplicated
    assert (h["committed_at_revoke"], h["duplicates_estimated"], h["duplicates_confirmed"]) == (50, 50, 50)
    assert (h["prev_agent_id"] != h["next_agent_id"]) and h["release_kind"] == "revoked"


def test_commit_after_next_owner_started_does_not_count():
    fleet = Fleet()
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=99).commits(P0, 50)
    m1.at(2_000).revokes(P0)
    m2.at(2_500).joins().assigned(P0).at(2_750).fetches(P0, 50)
    m1.at(3_000).commits(P0, 100, mode="auto")      # too late: m2 already read from 50
    [h] = handoffs_of(ownership_intervals(fleet.events))
    assert (h["committed_at_revoke"], h["duplicates_estimated"]) == (50, 50)


def test_owner_revoked_before_reading_passes_the_duplicates_on():
    """m2 is assigned and revoked again before its first fetch (a quick double rebalance):
    m1's uncommitted records surface at m3, and belong to m1's handoff."""
    fleet = Fleet()
    m1, m2, m3 = fleet.member("m1"), fleet.member("m2"), fleet.member("m3")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=99).commits(P0, 50)
    m1.at(2_000).revokes(P0)
    m2.at(2_500).joins().assigned(P0).at(3_000).revokes(P0)
    m3.at(3_500).joins().assigned(P0).at(3_750).fetches(P0, 50)
    first, second = sorted(handoffs_of(ownership_intervals(fleet.events)), key=lambda h: h["revoke_ms"])
    assert (first["prev_agent_id"], first["next_agent_id"]) == (m1.agent_id, m2.agent_id)
    assert (first["duplicates_estimated"], first["duplicates_confirmed"]) == (50, 50)
    assert second["duplicates_confirmed"] is None  # m2 processed nothing: nothing of its own to read again
    # the partition was idle from m1's revoke (2.0 s) to m3's first fetch (3.75 s), counted once
    assert (first["unavailable_s"], second["unavailable_s"]) == (1.0, 0.75)


def test_crashed_owner_bounds_are_confirmed_by_the_first_owner_that_reads():
    fleet = Fleet()
    m1, m2, m3 = fleet.member("m1"), fleet.member("m2"), fleet.member("m3")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=99).commits(P0, 50)
    m2.at(4_000).joins().assigned(P0).at(4_500).revokes(P0)   # m1 crashed after 1.0 s
    m3.at(5_000).joins().assigned(P0).at(5_200).fetches(P0, 50).at(6_200).processes(P0, upto=120, lag=30)
    crash, idle = sorted(handoffs_of(ownership_intervals(fleet.events)), key=lambda h: h["assigned_ms"])
    assert crash["release_kind"] == "crash" and crash["duplicates_lower"] == 50
    assert crash["duplicates_lower"] <= crash["duplicates_upper"] <= 151 - 50  # capped by m3's log end
    assert idle["duplicates_lower"] is None and idle["unavailable_s"] == 0.7


def test_progress_reported_after_a_stall_does_not_bound_the_lost_pause():
    """A member back from a stall past max.poll.interval.ms may report progress before its lost
    callback (agents before the fix did): its partitions were already taken, so the pause is
    bounded by its last progress before the stall, and the bounds stay ordered."""
    fleet = Fleet()
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=99)
    m2.at(20_000).joins().assigned(P0).at(20_100).fetches(P0, 0)   # the group gave P0 to m2 during the stall
    m1.at(25_000).exceeds_poll_interval().at(25_001).processes(P0, upto=99).at(25_002).loses(P0)
    [lost] = [h for h in handoffs_of(ownership_intervals(fleet.events)) if h["release_kind"] == "lost"]
    assert (lost["unavailable_lower_s"], lost["unavailable_upper_s"]) == (0.1, 19.1)
    assert lost["duplicates_confirmed"] == 100
