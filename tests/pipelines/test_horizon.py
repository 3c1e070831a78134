"""A group going on from its fold state is written from its horizon on (``pipelines.gold.horizon``): what the
pass gives before the horizon from the events seen so far must be what it gives from all of them, and
what it writes from the horizon on must be the whole pass's rows there. Pure: no Spark (the stage's
writes are checked by the sliced-gold tests: tests/e2e/test_gold_slices.py)."""
from __future__ import annotations

from typing import Any

import pytest

from pipelines.gold import group_pass
from pipelines.gold.causes import RESTART_WINDOW_S
from pipelines.gold.handoffs import handoffs_of
from tests.support.fleets import eager_rolling_restarts
from tests.support.reference_ownership import ownership_intervals

GAP_S = 10.0
# Fleets long enough to have a horizon: rebalances more than the gap apart, over many times the restart window
# (the built-in scenarios, with crashes, stalls, unseen owners and KIP-848: tests/e2e/test_gold_slices.py).
FLEETS = {"eager rolling restarts": eager_rolling_restarts(rounds=12)}


def _gold(events: list[dict[str, Any]], since_ms: int | None = None) -> tuple[Any, ...]:
    intervals = ownership_intervals(events)
    last_seen: dict[str, int] = {}
    for e in events:
        last_seen[e["agent_id"]] = max(e["event_time_ms"], last_seen.get(e["agent_id"], e["event_time_ms"]))
    return group_pass.group_gold(events, handoffs_of(intervals), last_seen, GAP_S, intervals, since_ms)


def _by_id(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {r[key]: r for r in rows}


@pytest.mark.parametrize("name", sorted(FLEETS))
def test_what_a_run_leaves_before_the_horizon_is_what_all_the_events_give(name):
    events = sorted(FLEETS[name].events, key=group_pass.order)
    handoffs, episodes, members, phases, coverage, at = _gold(events)
    assert at is None  # no since: the group whole
    start, end = events[0]["event_time_ms"], events[-1]["event_time_ms"]
    found = 0
    for k in range(1, 20):
        since = start + (end - start) * k // 20
        bounded = _gold(events, since)
        horizon = bounded[-1]
        if horizon is None:
            continue
        found += 1
        assert horizon <= since - (GAP_S + RESTART_WINDOW_S) * 1000
        # what is written from the horizon on: the whole pass's rows there
        assert _by_id(bounded[0], "handoff_id") == _by_id([h for h in handoffs if h["assigned_ms"] >= horizon],
                                                          "handoff_id")
        assert _by_id(bounded[1], "episode_id") == _by_id([e for e in episodes if e["end_ms"] >= horizon],
                                                          "episode_id")
        assert bounded[2:5] == (members, phases, coverage)
        # what stays before it: the same from the events before ``since`` alone
        seen = _gold([e for e in events if e["event_time_ms"] < since])
        assert _by_id([h for h in seen[0] if h["assigned_ms"] < horizon], "handoff_id") == \
            _by_id([h for h in handoffs if h["assigned_ms"] < horizon], "handoff_id")
        assert _by_id([e for e in seen[1] if e["end_ms"] < horizon], "episode_id") == \
            _by_id([e for e in episodes if e["end_ms"] < horizon], "episode_id")
    assert found >= 10, found  # most cuts of a long fleet with rebalances well apart have one
