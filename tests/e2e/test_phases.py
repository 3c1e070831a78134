"""Rebalance phases on the e2e lake (real members with the Python agent under every protocol): each
episode's phases (gold/episodes, the rebalance_episodes mart) are shown where the agent sees them,
and add up to at most the episode's duration, since they are spans of its slowest member's timeline."""
from __future__ import annotations

from pipelines import catalog, lake
from pipelines.sql_build import marts_path
from pipelines.vocabulary import REBALANCE_PHASE_NAMES


def test_episodes_carry_their_phases_within_their_duration(landed, spark):
    lake_path = landed["config"].lake_path
    episodes = [r.asDict() for r in lake.read(spark, lake_path, catalog.EPISODES).collect()]
    protocol = {group: {e["group_protocol"] for e in events} for group, events in landed["events"].items()}
    classic = [e for e in episodes if protocol[e["group_id"]] == {"classic"}]
    consumer = [e for e in episodes if protocol[e["group_id"]] == {"consumer"}]
    assert classic and consumer
    for e in episodes:
        shown = [e[n] for n in REBALANCE_PHASE_NAMES if e[n] is not None]
        assert all(s >= 0 for s in shown) and sum(shown) <= e["duration_s"] + 1e-9, e
    # every member joins, then its assign callback runs: each group shows both
    for group in {e["group_id"] for e in episodes}:
        mine = [e for e in episodes if e["group_id"] == group]
        assert any(e["join_s"] is not None for e in mine) and any(e["callbacks_s"] is not None for e in mine), group
    assert all(e["reconcile_s"] is None for e in classic)  # the classic protocol has no reconciliation
    assert any(e["reconcile_s"] is not None for e in consumer)
    mart = {r.episode_id: r.asDict() for r in spark.read.format("delta")
            .load(f"{marts_path(lake_path)}/rebalance_episodes").collect()}
    for e in episodes:
        assert {n: mart[e["episode_id"]][n] for n in (*REBALANCE_PHASE_NAMES, "slowest_agent_id")} == \
            {n: e[n] for n in (*REBALANCE_PHASE_NAMES, "slowest_agent_id")}
