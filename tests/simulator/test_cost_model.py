"""The cost model's parameters, fitted from a group's own gold rows."""
from __future__ import annotations

import pytest

from pipelines.simulator.cost_model import MIN_WINDOW_SAMPLES, fit, price, prior_pause_s
from pipelines.simulator.replay import SimHandoff, SimRebalance

pytestmark = pytest.mark.fast

HEARTBEAT_MS = {"eager": 1_000, "cooperative": 1_000, "consumer": 1_000}


def _interval(uncommitted_sum: int, samples: int) -> dict:
    """P0 read at 50 records/s for 100 s; ``samples`` ticks saw ``uncommitted_sum`` uncommitted records in all."""
    return {"topic": "t", "partition": 0, "first_fetch_ms": 0, "released_ms": 100_000, "last_progress_ms": 100_000,
            "processed": 5_000, "uncommitted_sum": uncommitted_sum, "uncommitted_samples": samples,
            "max_progress_interval_ms": 1_000.0}


def _revoke(duplicates: int) -> dict:
    return {"topic": "t", "partition": 0, "generation": 2, "release_kind": "revoked", "cause": "restart",
            "commit_in_revoke": False,
            "duplicates": duplicates, "duplicates_upper": duplicates, "pause_s": 0.5, "pause_upper_s": 0.5,
            "same_owner": False, "prev_agent_id": "a", "next_agent_id": "b", "revoke_callback_ms": 1.0}


def _fit(handoffs: list[dict], intervals: list[dict], left: dict[str, int] | None = None):
    members = [{"agent_id": a, "joined_ms": 0, "left_ms": (left or {}).get(a), "join_cause": "start",
                "leave_cause": None} for a in "abcd"]
    return fit(handoffs, intervals, members, "eager", HEARTBEAT_MS, 10_000)


def _prior(kind: str, owner_left: bool) -> float:
    return prior_pause_s(kind, owner_left, HEARTBEAT_MS[kind])


def test_a_replay_reads_the_window_at_the_periods_revokes_and_a_new_phase_the_ticks():
    """Two revokes re-delivered 10 records each on a 50 records/s partition (0.2 s); 40 progress ticks
    saw 25 uncommitted records on average (0.5 s). A replay of the period prices its rebalances at the
    moments they came (0.2 s); handoffs at moments of their own (a mixed phase) at the time average."""
    fitted = _fit([_revoke(10)] * 2, [_interval(1_000, 40)])
    assert (fitted.uncommitted_window_s, fitted.window_observations) == (0.2, 2)
    assert fitted.at_any_moment().uncommitted_window_s == 0.5


def test_too_few_ticks_leave_the_revokes_window_and_no_revokes_the_ticks():
    few = _fit([_revoke(10)] * 2, [_interval(25 * (MIN_WINDOW_SAMPLES - 1), MIN_WINDOW_SAMPLES - 1)])
    assert few.at_any_moment().uncommitted_window_s == few.uncommitted_window_s == 0.2
    no_revokes = _fit([], [_interval(1_000, 40)])
    assert (no_revokes.uncommitted_window_s, no_revokes.window_observations) == (0.5, 40)
    assert _fit([], []).uncommitted_window_s == 0.0


def _moved(prev: str, pause_s: float, same: bool = False) -> dict:
    return {**_revoke(10), "prev_agent_id": prev, "next_agent_id": prev if same else "b", "same_owner": same,
            "pause_s": pause_s, "pause_upper_s": pause_s, "revoke_ms": 12_001}


def test_a_moved_partition_is_priced_by_whether_its_owner_left():
    """scale-out-in under eager (ground truth): a leaver's partitions waited 0.8-1.1 s (its close, the
    others noticing, their round), a partition moved between staying members the round only, as long
    as one given back (0.02-0.12 s). Priced by one mean, roundrobin (9 moved, 3 of them a leaver's)
    looked 1.0 partition-s dearer than range (5 moved, 3 a leaver's); three reruns measured 0.0 ± 0.1."""
    observed = [_moved("d", 0.9)] * 3 + [_moved("a", 0.07)] * 6 + [_moved("c", 0.06, same=True)] * 3
    fitted = _fit(observed, [], left={"d": 12_000})
    assert fitted.move_pause_s["eager"] == (pytest.approx(0.9), pytest.approx(0.07))

    def rounds(stayers_moved: int, kept: int) -> list[SimRebalance]:
        hs = ([SimHandoff(("t", i), "graceful", True, left=True) for i in range(3)]
              + [SimHandoff(("t", 10 + i), "graceful", True) for i in range(stayers_moved)]
              + [SimHandoff(("t", 20 + i), "graceful", False) for i in range(kept)])
        return [SimRebalance(12_000, "scale_in", tuple(hs))]

    roundrobin, range_ = (price(rounds(*split), fitted, "eager", False, 10_000).pause_s for split in ((6, 3), (2, 7)))
    assert roundrobin == pytest.approx(3 * 0.9 + 6 * 0.07 + 3 * 0.06)
    assert roundrobin - range_ == pytest.approx(4 * (0.07 - 0.06))  # 0.04 s, where one mean of all moves said 1.0
    # another kind is priced by its priors, each with what this group's pauses have beyond eager's
    left, stayed = fitted.move_pause_s["cooperative"]
    assert price(rounds(6, 3), fitted, "cooperative", False, 10_000).pause_s == pytest.approx(
        3 * left + 6 * stayed + 3 * 0.06)
    overhead = (3 * (0.9 - _prior("eager", True)) + 6 * (0.07 - _prior("eager", False))) / 9
    assert (left, stayed) == (pytest.approx(overhead + _prior("cooperative", True)),
                              pytest.approx(overhead + _prior("cooperative", False)))


def test_a_kind_the_group_showed_half_of_takes_the_other_half_from_its_prior():
    """No leaver seen: a leaver's partition under the group's own kind is the prior plus the group's overhead."""
    fitted = _fit([_moved("a", 0.1)] * 2, [], left={"d": 12_000})
    assert fitted.move_pause_s["eager"] == (
        pytest.approx(0.1 - _prior("eager", False) + _prior("eager", True)), pytest.approx(0.1))


def _slow(duplicates: int, pause_s: float, longest_tick_ms: float, commit_in_revoke: bool = False):
    """Eight moves between staying members (prior 0.07 s) that each paused ``pause_s`` and re-delivered
    ``duplicates`` records of a 50 records/s partition; its owners' longest progress tick ``longest_tick_ms``
    against the shortest 1,000 (the agent ticks at the first poll after its timer)."""
    moves = [{**_moved("a", pause_s), "duplicates": duplicates, "duplicates_upper": duplicates,
              "commit_in_revoke": commit_in_revoke}] * 8
    ticks = [{**_interval(1_000, 40), "max_progress_interval_ms": ms} for ms in (1_000.0, longest_tick_ms)]
    return _fit(moves, ticks)


def _one_move(fitted, commit_on_revoke: bool) -> float:
    rebalance = [SimRebalance(12_000, "restart", (SimHandoff(("t", 0), "graceful", True),))]
    return price(rebalance, fitted, "eager", commit_on_revoke, 10_000).pause_s


def test_commit_on_revoke_takes_the_redelivered_records_share_of_the_pause_where_members_are_away_from_poll():
    """lazy-commits' mechanism: slow records keep a member from polling while it re-reads what a rebalance
    handed it again, so the next rebalance and the gainer's first record wait. Each move here paused 1.07 s,
    1.0 beyond its prior, with 100 records re-delivered and 53.5 produced while it waited: 6.5 ms of pause a
    record in hand. Commit-on-revoke re-delivers none: 0.65 s less a move (at most half the longest batch in
    hand, where a rebalance lands on average: the members were seen 3 s away from poll)."""
    fitted = _slow(100, 1.07, 4_000.0)
    per_record = 1.0 / (100 + 50 * 1.07)
    assert (fitted.backlog.s_per_record, fitted.backlog.away_s) == (pytest.approx(per_record), 3.0)
    assert _one_move(fitted, False) == pytest.approx(1.07)  # the observed setting: its measured pause
    assert _one_move(fitted, True) == pytest.approx(1.07 - per_record * 100)
    # members that poll often (fast records: 0.03 s away at most) wait for no batch, whatever they re-deliver
    fast = _slow(100, 1.07, 1_030.0)
    assert _one_move(fast, True) == pytest.approx(1.07 - 0.03 / 2)


def test_a_group_already_committing_on_revoke_prices_what_stopping_would_add():
    """Its pauses beyond the priors are the records produced while it waited; without the commit, each
    move would also hand back its uncommitted records (the ticks' window: 0.5 s at 50 records/s)."""
    fitted = _slow(0, 1.07, 4_000.0, commit_in_revoke=True)
    per_record = 1.0 / (50 * 1.07)
    assert fitted.backlog.observed_share == 0.0 and _one_move(fitted, True) == pytest.approx(1.07)
    assert _one_move(fitted, False) == pytest.approx(1.07 + min(per_record * 25, 3.0 / 2))


def test_pauses_within_their_priors_leave_commit_on_revoke_no_pause_to_save():
    fitted = _slow(100, 0.07, 4_000.0)
    assert fitted.backlog.s_per_record == 0.0 and _one_move(fitted, True) == _one_move(fitted, False)
