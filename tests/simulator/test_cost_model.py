"""The cost model's parameters, fitted from a group's own gold rows."""
from __future__ import annotations

import pytest

from pipelines.simulator.cost_model import MIN_WINDOW_SAMPLES, fit

pytestmark = pytest.mark.fast

HEARTBEAT_MS = {"eager": 1_000, "cooperative": 1_000, "consumer": 1_000}


def _interval(uncommitted_sum: int, samples: int) -> dict:
    """P0 read at 50 records/s for 100 s; ``samples`` ticks saw ``uncommitted_sum`` uncommitted records in all."""
    return {"topic": "t", "partition": 0, "first_fetch_ms": 0, "released_ms": 100_000, "last_progress_ms": 100_000,
            "processed": 5_000, "uncommitted_sum": uncommitted_sum, "uncommitted_samples": samples}


def _revoke(duplicates: int) -> dict:
    return {"topic": "t", "partition": 0, "generation": 2, "release_kind": "revoked", "cause": "restart",
            "commit_in_revoke": False,
            "duplicates": duplicates, "duplicates_upper": duplicates, "pause_s": 0.5, "pause_upper_s": 0.5,
            "same_owner": False, "prev_agent_id": "a", "next_agent_id": "b", "revoke_callback_ms": 1.0}


def _fit(handoffs: list[dict], intervals: list[dict]):
    members = [{"agent_id": a, "joined_ms": 0, "left_ms": None, "join_cause": "start", "leave_cause": None}
               for a in "ab"]
    return fit(handoffs, intervals, members, "eager", HEARTBEAT_MS, 10_000)


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
