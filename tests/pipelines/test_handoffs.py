"""Handoff arithmetic on the pure functions: offsets are NEXT-to-read, last_processed is the last record."""
from __future__ import annotations

from pipelines.handoffs import handoffs_of
from pipelines.ownership import ownership_intervals
from pipelines.synthetic import P0, Fleet


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
