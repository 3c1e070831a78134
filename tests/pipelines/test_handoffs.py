"""Handoff arithmetic on the pure functions: offsets are NEXT-to-read, last_processed is the last record."""
from __future__ import annotations

import pytest

from pipelines.gold.handoffs import handed_out_nothing, handoffs_of
from tests.support.reference_ownership import ownership_intervals
from lens_scenarios.synthetic import P0, P1, Fleet


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
    assert (h["committed_at_revoke"], h["uncommitted_at_revoke"], h["duplicates"], h["duplicates_upper"]) == \
        (100, 0, 0, 0)
    assert (h["pause_s"], h["pause_upper_s"]) == (0.75, 0.75) and h["revoke_callback_ms"] == 4.0


def test_uncommitted_records_are_read_again():
    h = _one_handoff(auto_commit_after_revoke=False, next_starts_at=50)
    # processed 0..99, committed 50: records 50..99 are duplicated
    assert (h["committed_at_revoke"], h["uncommitted_at_revoke"], h["duplicates"], h["duplicates_upper"]) == \
        (50, 50, 50, 50)
    assert (h["prev_agent_id"] != h["next_agent_id"]) and h["release_kind"] == "revoked"


def test_commit_after_next_owner_started_does_not_count():
    fleet = Fleet()
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=99).commits(P0, 50)
    m1.at(2_000).revokes(P0)
    m2.at(2_500).joins().assigned(P0).at(2_750).fetches(P0, 50)
    m1.at(3_000).commits(P0, 100, mode="auto")      # too late: m2 already read from 50
    [h] = handoffs_of(ownership_intervals(fleet.events))
    assert (h["committed_at_revoke"], h["uncommitted_at_revoke"]) == (50, 50)


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
    assert (first["uncommitted_at_revoke"], first["duplicates"], first["duplicates_upper"]) == (50, 50, 50)
    # m2 handed out nothing: nothing of its own to read again, exactly
    assert (second["duplicates"], second["duplicates_upper"], second["uncommitted_at_revoke"]) == (0, 0, 0)
    # the partition was idle from m1's revoke (2.0 s) to m3's first fetch (3.75 s), counted once
    pauses = (first["pause_s"], first["pause_upper_s"], second["pause_s"], second["pause_upper_s"])
    assert pauses == (1.0, 1.0, 0.75, 0.75)


def test_crashed_owner_bounds_are_confirmed_by_the_first_owner_that_reads():
    fleet = Fleet()
    m1, m2, m3 = fleet.member("m1"), fleet.member("m2"), fleet.member("m3")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=99).commits(P0, 50)
    m2.at(4_000).joins().assigned(P0).at(4_500).revokes(P0)   # m1 crashed after 1.0 s
    m3.at(5_000).joins().assigned(P0).at(5_200).fetches(P0, 50).at(6_200).processes(P0, upto=120, lag=30)
    crash, idle = sorted(handoffs_of(ownership_intervals(fleet.events)), key=lambda h: h["assigned_ms"])
    assert crash["release_kind"] == "crash" and crash["duplicates"] == 50
    assert crash["duplicates"] <= crash["duplicates_upper"] <= 151 - 50  # capped by m3's log end
    # m2 handed out nothing: its own release re-delivers nothing, exactly
    assert (idle["duplicates"], idle["duplicates_upper"]) == (0, 0)
    assert (idle["pause_s"], idle["pause_upper_s"]) == (0.7, 0.7)


def _crash(m1_acts, assigned_ms: int = 10_000, log_end: int = 1_000) -> dict:
    """m1 owns P0 and is killed after ``m1_acts`` (its telemetry); m2 is assigned at ``assigned_ms``,
    reads from the committed offset 100 0.2 s later and reports ``log_end`` a second after."""
    fleet = Fleet()
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1_acts(m1.at(0).joins().assigned(P0))
    m2.at(assigned_ms).joins().assigned(P0).at(assigned_ms + 200).fetches(P0, 100)
    m2.at(assigned_ms + 1_200).processes(P0, upto=log_end - 1, lag=0)
    [h] = handoffs_of(ownership_intervals(fleet.events))
    assert h["release_kind"] == "crash"
    return h


def test_a_crashed_owner_is_bounded_by_the_tick_it_did_not_send():
    """The log grows 50 records/s (log end 50 at 1 s, 160 at 3.2 s), a tick a second (the longest
    1.2 s), the last at 3.2 s with 149 handed out: its next tick would have reached the topic by
    3.2 + 1.2 + 0.5 s, so it handed out at most up to the log end then, 160 + ceil(50 * 1.7) =
    245 (exclusive), and its last record came between 2.2 s (the tick before the last, which
    counted records) and 4.9 s."""
    def m1_acts(m1):
        m1.at(50).fetches(P0, 0).at(1_000).processes(P0, upto=49, lag=0)
        m1.at(2_200).processes(P0, upto=99, lag=10, interval_ms=1_200)
        m1.at(2_300).commits(P0, 100).at(3_200).processes(P0, upto=149, lag=10)

    h = _crash(m1_acts, log_end=160 + 50 * 8)  # m2's first progress at 11.2 s
    assert (h["duplicates"], h["duplicates_upper"]) == (150 - 100, 245 - 100)
    assert (h["pause_s"], h["pause_upper_s"]) == (5.3, 8.0)


def test_a_crash_detected_before_its_next_tick_was_due_is_bounded_by_the_detection():
    """Ticks every 5 s, the log growing 30 records/s, the last tick at 6 s; m2 is assigned at 9 s,
    before the next tick was due: at most 3 s more of records, ceil(30 * 3) = 90; its last record
    came after 1 s (the tick before the last)."""
    def m1_acts(m1):
        m1.at(50).fetches(P0, 0).at(1_000).processes(P0, upto=49, interval_ms=5_000)
        m1.at(6_000).processes(P0, upto=199, interval_ms=5_000)

    h = _crash(m1_acts, assigned_ms=9_000, log_end=200 + 126)  # m2's first progress at 10.2 s
    assert (h["duplicates"], h["duplicates_upper"]) == (200 - 100, 200 + 90 - 100)
    assert (h["pause_s"], h["pause_upper_s"]) == (0.2, 8.2)


def test_the_log_growing_faster_after_the_last_tick_widens_the_bound():
    """Produced 50 records/s while m1 ticked, then faster: 660 records in the 8 s to m2's first
    progress (82.5/s); the faster rate counts: ticks a second apart, the last at 3.2 s, so at
    most ceil(82.5 * 1.5) = 124 records produced after the tick's log end (160)."""
    def m1_acts(m1):
        m1.at(50).fetches(P0, 0).at(1_000).processes(P0, upto=49, lag=0).at(3_200).processes(P0, upto=149, lag=10)

    h = _crash(m1_acts, log_end=160 + 660)
    assert h["duplicates_upper"] == 160 + 124 - 100


def test_a_crash_before_the_first_tick_still_has_both_bounds():
    """Killed before its first progress tick: it handed out its first record (offset 100), and
    at most what existed at m2's first progress (log end 1,000)."""
    h = _crash(lambda m1: m1.at(50).fetches(P0, 100))
    assert (h["duplicates"], h["duplicates_upper"]) == (1, 900)
    assert (h["pause_s"], h["pause_upper_s"]) == (0.2, 10.15)


def test_a_crashed_owner_seen_reading_nothing_surely_duplicated_nothing():
    h = _crash(lambda m1: m1)
    assert (h["duplicates"], h["duplicates_upper"], h["pause_s"], h["pause_upper_s"]) == (0, 900, 0.2, 10.2)


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
    assert (lost["pause_s"], lost["pause_upper_s"]) == (0.1, 19.1)
    assert (lost["duplicates"], lost["duplicates_upper"]) == (100, 100)


def _revoke_then_fetch(**fetch) -> dict:
    """m1 processes P0 to 99 (committed 80) and is revoked at 10 s; m2 is assigned at 10.5 s and reads at 12 s."""
    fleet = Fleet()
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(5_000).processes(P0, upto=99).commits(P0, 80)
    m1.at(10_000).revokes(P0)
    m2.at(10_000).joins().at(10_500).assigned(P0).at(12_000).fetches(P0, **{"offset": 80, **fetch})
    [h] = handoffs_of(ownership_intervals(fleet.events))
    return h


def test_an_idle_partition_pauses_only_while_a_record_waits():
    waiting = _revoke_then_fetch(produced_ms=3_000)      # produced before the revoke: waited 10 -> 12 s
    arrived = _revoke_then_fetch(produced_ms=10_200)     # produced between revoke and assignment
    idle = _revoke_then_fetch(produced_ms=11_000)        # produced after the assignment: nothing waited
    pauses = [(h["pause_s"], h["pause_upper_s"]) for h in (waiting, arrived, idle)]
    assert pauses == [(2.0, 2.0), (1.8, 1.8), (0.0, 0.0)]
    assert waiting["duplicates"] == idle["duplicates"] == idle["duplicates_upper"] == 20


def test_a_first_record_found_late_gives_bounds_never_a_silent_zero():
    found = _revoke_then_fetch(window_ms=5_000)  # handed out within the 5 s before 12 s, offset known
    assert (found["pause_s"], found["pause_upper_s"]) == (0.0, 2.0)  # bounds, not one figure
    assert (found["duplicates"], found["duplicates_upper"]) == (20, 20)
    unknown = _revoke_then_fetch(window_ms=1_000, offset=-1001)  # the committed offset could not be asked
    assert (unknown["duplicates"], unknown["duplicates_upper"], unknown["uncommitted_at_revoke"]) == (0, 20, 20)
    assert (unknown["pause_s"], unknown["pause_upper_s"]) == (1.0, 2.0)


def test_a_partition_given_back_twice_from_one_offset_is_two_handoffs():
    """Two eager rebalances 0.16 s apart (members re-subscribing at different moments) give m1
    its partition back twice, and it commits nothing in between: it reads from the same committed
    offset both times (turbulent-minute under roundrobin). Two same-owner handoffs, alike but for
    their figures: the second re-reads what the first re-read and what came after it."""
    fleet = Fleet()
    m1 = fleet.member("m1")
    m1.at(0).joins().assigned(P0).fetches(P0, 1500).at(900).processes(P0, upto=1619).commits(P0, 1580)
    m1.at(1_000).revokes(P0).at(1_003).assigned(P0).at(1_070).fetches(P0, 1580, produced_ms=500)
    m1.at(1_071).processes(P0, upto=1625).at(1_165).revokes(P0)
    m1.at(2_190).assigned(P0).at(2_196).fetches(P0, 1580, produced_ms=500)
    first, second = sorted(handoffs_of(ownership_intervals(fleet.events)), key=lambda h: h["assigned_ms"])
    assert first["same_owner"] and second["same_owner"]
    assert first["first_fetch_offset"] == second["first_fetch_offset"] == 1580
    assert (first["duplicates"], first["pause_s"], first["pause_upper_s"]) == (40, 0.07, 0.07)
    assert (second["duplicates"], second["pause_s"], second["pause_upper_s"]) == (46, 1.031, 1.031)


def test_a_crashed_owners_successor_found_late_without_its_offset_bounds_the_duplicates():
    """m1 processed 0..99 (committed 50) and crashed; m2's first record was found at a tick without
    the group's committed offset: it started at or after 50. m1 handed out at most to 101: the log
    end at its last tick (100) plus the log's growth until its next tick was due (1 s interval +
    0.5 s send allowance, at the rate the log grew to m2's first tick: 51 records in 40 s)."""
    fleet = Fleet()
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=99).commits(P0, 50)
    m2.at(4_000).joins().assigned(P0).at(40_000).fetches(P0, -1001, window_ms=1_000)
    m2.at(41_000).processes(P0, upto=120, lag=30)
    [crash] = handoffs_of(ownership_intervals(fleet.events))
    assert crash["release_kind"] == "crash" and crash["first_fetch_offset"] is None
    assert (crash["duplicates"], crash["duplicates_upper"]) == (0, 101 + 1 - 50)
    assert (crash["pause_s"], crash["pause_upper_s"]) == (36.5, 40.0)  # stopped between its first fetch and 2.5 s


def test_a_crashed_owner_that_never_read_the_partition_adds_no_wait_the_link_before_it_counted():
    """m1 is revoked at 2 s with a record waiting; m2 is assigned at 2.5 s, ticks once idle and is killed;
    m3, assigned at 8 s, reads at 8.2 s. The record waited 6.2 s, counted once across the two links (the
    chain once counted m2's silence in both: a Java-member run found it, 2.55 s for a truth of 1.35 s)."""
    fleet = Fleet()
    m1, m2, m3 = fleet.member("m1"), fleet.member("m2"), fleet.member("m3")
    m1.at(0).joins().assigned(P0).fetches(P0, 0).at(1_000).processes(P0, upto=49).commits(P0, 50)
    m1.at(2_000).revokes(P0)
    m2.at(2_500).joins().assigned(P0).at(3_500).processes(P0, upto=-1)
    m3.at(8_000).joins().assigned(P0).at(8_200).fetches(P0, 50, produced_ms=1_500)
    revoked, crash = sorted(handoffs_of(ownership_intervals(fleet.events)), key=lambda h: h["assigned_ms"])
    assert crash["release_kind"] == "crash"
    assert (revoked["pause_s"], revoked["pause_upper_s"]) == (6.0, 6.0)
    assert crash["pause_s"] == 0.2 and crash["pause_upper_s"] == 5.7  # had it read, unseen, from 2.5 s


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_partition_revoked_before_its_first_record_cost_exactly_no_duplicates(protocol):
    """An eager group's formation (classic): m1 gets both partitions, m2 joins before m1 read any,
    m1 gives both back and gets P0 again. Under KIP-848 (consumer): m1 gets both, m2 joins and m1
    revokes P1 before reading it. The releases of what was never handed out are 0 duplicates exactly,
    where the releases of what was read keep their offsets' figure."""
    cooperative = protocol == "consumer"
    fleet = Fleet()
    settings = {"group_protocol": protocol, "rebalance_protocol": "cooperative" if cooperative else "eager"}
    m1, m2 = fleet.member("m1", **settings), fleet.member("m2", **settings)
    m1.at(0).joins().assigned(P0, P1, generation=1).fetches(P0, 0)
    m1.at(500).processes_many({P0: 9}).commits(P0, 5)
    m2.at(600).joins()
    m1.at(700).revokes(*((P1,) if cooperative else (P0, P1)))
    if not cooperative:
        m1.at(800).assigned(P0, generation=2).fetches(P0, 5)
    m2.at(800).assigned(P1, generation=2).fetches(P1, 0)
    by_partition = {h["partition"]: h for h in handoffs_of(ownership_intervals(fleet.events))}
    never_read = by_partition[1]
    assert (never_read["duplicates"], never_read["duplicates_upper"], never_read["uncommitted_at_revoke"]) == \
        (0, 0, 0)
    if not cooperative:  # P0 was read to 9, committed at 5: 5..9 read again by m1 itself
        assert (by_partition[0]["duplicates"], by_partition[0]["duplicates_upper"]) == (5, 5)


def test_the_agents_word_decides_whether_anything_was_handed_out():
    """Once the agents send ``handed_out`` at a release, it decides; without it, no first record and no
    position do."""
    owner = {"first_fetch_ms": None, "position_at_release": None, "last_processed_at_release": None}
    assert handed_out_nothing(owner)
    assert not handed_out_nothing({**owner, "handed_out_at_release": True})
    assert handed_out_nothing({**owner, "first_fetch_ms": 5, "handed_out_at_release": False})
    assert not handed_out_nothing({**owner, "position_at_release": 12})  # a position: something was handed out
    assert not handed_out_nothing({**owner, "first_fetch_ms": 5})
