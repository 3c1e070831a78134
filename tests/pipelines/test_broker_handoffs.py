"""Handoffs priced from the broker's log (pipelines/gold/broker_handoffs.py) on hand-made history rows.

A partition produced at 50 records a second from time 0 (the log end at t ms is t // 20), an
owner A committing every two seconds, a new owner B: each case checks the formulas of the
module docstring on numbers worked out by hand.
"""
from __future__ import annotations

import pytest

from pipelines.gold.broker_handoffs import LOG_END_FIELDS, LogEnds, broker_handoffs, stop_window
from tests.support.broker_rows import A_COMMITS, B_COMMITS, change as _change, commit as _commit, log_ends as _log_ends


def _priced(changes: list[dict], commits: list[dict], every_ms: int | None = None) -> dict:
    (row,) = broker_handoffs(changes, commits, _log_ends(changes, commits, every_ms), cluster_id="c")
    return row


def test_a_kip848_revocation_is_bounded_by_its_request_and_acknowledgement():
    row = _priced([_change()], A_COMMITS + B_COMMITS)
    assert (row["stopped_after_ms"], row["stopped_by_ms"]) == (10_000, 10_200)
    # B starts at A's last commit (300); A cannot have read past the log end when it surely stopped (510)
    assert (row["duplicates"], row["duplicates_upper"], row["start_offset"]) == (0, 510 - 300, 300)
    # nobody read it from the acknowledgement to B's assignment; B read it before committing past 300
    assert row["pause_s"] == pytest.approx(0.8) and row["pause_upper_s"] == pytest.approx(12.5 - 10.0)
    # A stops when told (10 s); A's rate (100 records in 2 s) says it reached 350, not the log end's 500
    assert row["pause_estimate_s"] == pytest.approx(1.0) and row["duplicates_estimate"] == 50
    assert (row["source"], row["cluster_id"], row["prev_member_id"], row["next_member_id"]) == ("broker", "c", "A", "B")
    assert row["release_kind"] == "revoked" and row["committed_at_revoke"] == 300


def test_an_eager_round_is_wide_below_and_has_no_estimate():
    change = _change(protocol="classic", kind="reassigned", owner="A", previous_since_ms=1_000,
                     revoke_requested_ms=None, released_ms=None, release_kind=None, generation=3,
                     join_completed_ms=10_950, member_epoch=None)
    row = _priced([change], A_COMMITS + [_commit(12_000, 360)])
    # A surely still read after its commit before the last advance (7 s); it stopped by the join's completion
    assert (row["stopped_after_ms"], row["stopped_by_ms"]) == (7_000, 10_950)
    assert row["duplicates_upper"] == 10_950 // 20 - 300 and row["same_owner"] and row["generation"] == 3
    assert row["pause_s"] == pytest.approx(0.05) and row["pause_upper_s"] == pytest.approx(12.0 - 7.0)
    assert row["pause_estimate_s"] is None and row["duplicates_estimate"] is None


def test_without_a_commit_the_new_owner_may_start_at_the_log_start():
    row = _priced([_change()], B_COMMITS[1:])
    assert row["start_offset"] is None and row["duplicates"] == 0 and row["duplicates_upper"] == 510
    assert row["pause_s"] == 0.0  # whether a record waited depends on auto.offset.reset: not known
    assert row["pause_upper_s"] == pytest.approx(12.5 - 10.0)


def test_a_new_owner_that_lets_go_before_committing_bounds_the_pause_by_its_own_stop():
    first = _change()
    second = _change(at_ms=14_000, owner="C", previous_owner="B", previous_since_ms=11_000,
                     revoke_requested_ms=13_000, released_ms=13_300, offset=2)
    rows = broker_handoffs([first, second], A_COMMITS, _log_ends([first, second], A_COMMITS))
    by_next = {r["next_member_id"]: r for r in rows}
    assert by_next["B"]["pause_upper_s"] == pytest.approx(13.3 - 10.0)  # B read nothing or stopped by 13.3 s
    assert by_next["C"]["pause_upper_s"] is None  # C has not committed past 300: open
    assert by_next["C"]["duplicates_upper"] == 13_300 // 20 - 300


def test_sampled_log_ends_widen_the_bounds_on_their_safe_side():
    exact = _priced([_change()], A_COMMITS + B_COMMITS)
    sampled = _priced([_change()], A_COMMITS + B_COMMITS, every_ms=1_000)
    assert sampled["duplicates_upper"] >= exact["duplicates_upper"]
    assert sampled["pause_s"] <= exact["pause_s"] and sampled["pause_upper_s"] >= exact["pause_upper_s"]


def test_a_record_produced_after_the_assignment_waited_for_nobody():
    # A committed everything it read, and the next record came after B was assigned
    ends = [dict(zip(LOG_END_FIELDS, ("t", 0, at, 300))) for at in (0, 10_000, 10_200, 11_000)]
    ends[0]["log_end_offset"] = 0
    (row,) = broker_handoffs([_change()], A_COMMITS + B_COMMITS, ends)
    assert row["duplicates_upper"] == 0 and row["pause_s"] == 0.0
    assert row["pause_upper_s"] == pytest.approx(12.5 - 11.0)  # record 300 was produced after 11 s


@pytest.mark.parametrize(("fields", "window"), [
    # a KIP-848 owner that left or was fenced: from its commits to its tombstone
    ({"release_kind": "removed", "revoke_requested_ms": None}, (7_000, 10_200, None)),
    # a KIP-848 static member's leave (epoch -2): it stopped right before
    ({"release_kind": "static_leave", "kind": "replaced", "revoke_requested_ms": None}, (7_000, 10_200, 10_200)),
    # classic cooperative: revoked at a sync, stopped by the next round's join
    ({"protocol": "classic", "release_kind": "revoked", "revoke_requested_ms": None, "released_ms": 9_500,
      "join_completed_ms": 10_800}, (9_500, 10_800, 9_500)),
    # classic, an owner that left: by the round's join at the latest
    ({"protocol": "classic", "release_kind": "removed", "revoke_requested_ms": None, "released_ms": 10_900,
      "join_completed_ms": 10_800}, (7_000, 10_800, None)),
    # classic static member replaced under a new id: by its replacement
    ({"protocol": "classic", "kind": "replaced", "release_kind": None, "revoke_requested_ms": None,
      "released_ms": None, "join_completed_ms": 2_000}, (7_000, 11_000, None)),
])
def test_the_stop_window_of_each_way_an_owner_lets_go(fields, window):
    assert tuple(vars(stop_window(_change(**fields), 7_000)).values()) == window


def test_log_ends_read_a_sample_on_the_safe_side():
    ends = LogEnds([{"topic": "t", "partition": 0, "at_ms": t, "log_end_offset": t // 10} for t in (1000, 2000)])
    assert ends.at_least(("t", 0), 1500) == 200 and ends.at_most(("t", 0), 1500) == 100
    assert ends.at_least(("t", 0), 2500) is None and ends.at_most(("t", 0), 500) is None
    assert ends.produced_between(("t", 0), 150) == (1000, 2000)


def test_a_tenure_carries_across_the_groups_conversion_to_the_consumer_protocol():
    """A static classic member closed (no leave), its replacement on the consumer protocol converts the
    group: the classic records release its partition, the consumer records hold it from the conversion,
    then hand it on. It stopped before the conversion: its tenure began with its classic assignment."""
    classic_release = _change(protocol="classic", kind="released", owner=None, previous_since_ms=1_000,
                              at_ms=10_000, released_ms=10_000, release_kind="removed", revoke_requested_ms=None)
    converted = _change(kind="assigned", owner="A", previous_owner=None, previous_since_ms=None, at_ms=10_000,
                        released_ms=None, release_kind=None, revoke_requested_ms=None, offset=2)
    handed = _change(kind="assigned", owner="B", previous_since_ms=10_000, at_ms=11_000, released_ms=10_500,
                     release_kind="removed", revoke_requested_ms=None, offset=3)
    changes = [classic_release, converted, handed]
    (row,) = broker_handoffs(changes, A_COMMITS, _log_ends(changes, A_COMMITS))
    assert row["prev_assigned_ms"] == 1_000 and row["stopped_after_ms"] == 7_000


def test_another_member_given_the_partition_at_the_conversion_is_a_handoff():
    """The classic owner A lets go as the group converts and B, a consumer-protocol member, is given the
    partition in the same write: one protocol's records hold the release, the other's the assignment, and
    the handoff from A to B is priced as any other (seen on the migration of a plain group)."""
    classic_release = _change(protocol="classic", kind="released", owner=None, previous_since_ms=1_000,
                              at_ms=10_000, released_ms=10_000, release_kind="removed", revoke_requested_ms=None)
    converted = _change(kind="assigned", owner="B", previous_owner=None, previous_since_ms=None, at_ms=10_000,
                        released_ms=None, release_kind=None, revoke_requested_ms=None, offset=2)
    later = _change(kind="assigned", owner="C", previous_owner=None, previous_since_ms=None, at_ms=20_000,
                    released_ms=None, release_kind=None, revoke_requested_ms=None, offset=3, partition=1)
    changes = [classic_release, converted, later]
    rows = broker_handoffs(changes, A_COMMITS, _log_ends(changes, A_COMMITS))
    assert [(r["prev_member_id"], r["next_member_id"], r["prev_assigned_ms"]) for r in rows] == [("A", "B", 1_000)]
