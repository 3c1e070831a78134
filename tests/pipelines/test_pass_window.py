"""A group going on from its fold state is read from its window (``pipelines.gold.pass_window``): the window
Spark finds is the horizon the pure pass finds, and the pass over the handoffs and intervals Spark keeps
from it gives the whole pass's rows from the horizon on (its coverage from the window's hour on).
Each cut of one long fleet is a group of its own, so Spark runs each step once."""
from __future__ import annotations

from typing import Any

import orjson

from pipelines import catalog
from pipelines.gold import group_pass, pass_window
from pipelines.gold.horizon import coverage_from, latest_start
from pipelines.gold.handoffs import handoffs_of
from tests.support.fleets import eager_rolling_restarts
from tests.support.reference_ownership import ownership_intervals

GAP_S = 10.0
CUTS = 8
EVENT_DDL = "cluster_id string, group_id string, kind string, event_time_ms bigint, body string"


def _rows(rows: list[dict[str, Any]], table: catalog.Table, group_id: str) -> list[tuple]:
    return [tuple(group_id if c == "group_id" else r.get(c) for c in table.column_names()) for r in rows]


def _written(rows: list[dict[str, Any]], table: catalog.Table) -> dict[Any, tuple]:
    """The rows as the stage writes them: the table's columns, by key."""
    return {tuple(r[k] for k in table.keys): tuple(r.get(c) for c in table.column_names()) for r in rows}


def test_the_pass_read_from_its_window_gives_the_whole_pass_rows_from_its_horizon_on(spark):
    events = sorted(eager_rolling_restarts(rounds=70).events, key=group_pass.order)  # 70 min: two hours
    intervals = ownership_intervals(events)
    handoffs = handoffs_of(intervals)
    last_seen: dict[str, int] = {}
    for e in events:
        last_seen[e["agent_id"]] = max(e["event_time_ms"], last_seen.get(e["agent_id"], e["event_time_ms"]))
    whole = group_pass.group_gold(events, handoffs, last_seen, GAP_S, intervals)
    start, end = events[0]["event_time_ms"], events[-1]["event_time_ms"]
    since = {f"cut{k}": start + (end - start) * k // CUTS for k in range(1, CUTS)}
    cluster = events[0]["cluster_id"]
    frame = spark.createDataFrame([(cluster, g, e["kind"], e["event_time_ms"], orjson.dumps(e["body"]).decode())
                                   for g in since for e in events], EVENT_DDL)
    windows = pass_window.starts(spark, frame, {(cluster, g): latest_start(t, GAP_S) for g, t in since.items()},
                                 GAP_S)
    of_group = {(cluster, g): w for (_, g), w in windows.items()}
    kept_handoffs = pass_window.handoffs_from(spark, spark.createDataFrame(
        [r for g in since for r in _rows(handoffs, catalog.HANDOFFS, g)], catalog.HANDOFFS.ddl()), of_group).collect()
    kept_intervals = pass_window.intervals_from(spark, spark.createDataFrame(
        [r for g in since for r in _rows(intervals, catalog.OWNERSHIP, g)], catalog.OWNERSHIP.ddl()),
        of_group).collect()
    read = covered = 0
    for g, t in since.items():
        bounded = group_pass.group_gold(events, handoffs, last_seen, GAP_S, intervals, t)
        at = bounded[-1]
        assert windows.get((cluster, g)) == at  # no check fails on this fleet: the window is the horizon
        if at is None:
            continue
        mine_h = [{**r.asDict(), "group_id": events[0]["group_id"]} for r in kept_handoffs if r.group_id == g]
        mine_i = [{**r.asDict(), "group_id": events[0]["group_id"]} for r in kept_intervals if r.group_id == g]
        assert len(mine_h) < len(handoffs) and (len(mine_i) < len(intervals) or coverage_from(at) <= start)
        windowed = group_pass.group_gold(events, mine_h, last_seen, GAP_S, mine_i, t, at)
        assert windowed is not None, g
        read += 1
        assert _written(windowed[0], catalog.HANDOFFS) == _written(bounded[0], catalog.HANDOFFS)
        assert _written(windowed[1], catalog.EPISODES) == _written(bounded[1], catalog.EPISODES)
        assert windowed[2:4] == bounded[2:4] == whole[2:4]  # members and phases: whole
        assert windowed[4] == [c for c in whole[4] if c["hour_start_ms"] >= coverage_from(at)]
        assert windowed[5] == at
        covered += bool(windowed[4])
    assert read >= CUTS // 2 and covered > 0, (read, covered)  # some windows begin before the fleet's second hour
