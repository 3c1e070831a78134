"""The per-episode phases chart: each rebalance's slowest member, its classic join split into JoinGroup, the
leader's assignment and SyncGroup where its client's coordinator timed them, each bar stating its precision; from
the rebalance_episodes mart's rows."""
from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from pipelines.vocabulary import JOIN_STEPS, PHASE_SOURCES_DECLARED
from tuning_report.figures import cause_label, episode_phases, phased_episodes

pytestmark = pytest.mark.fast
T0 = datetime(2026, 11, 28, 12, 0, 0)


def _episodes() -> pl.DataFrame:
    rows = [  # (cause, join_s, join_group_s, leader_assign_s, sync_group_s, callbacks_s, reconcile_s, phase_source)
        ("start", 0.5, 0.4, 0.05, 0.05, 0.1, None, "client_coordinator"),
        ("restart", 2.0, None, None, None, 0.5, None, "client_metrics"),
        ("crash", None, None, None, None, None, None, None),  # no member showed a phase
        ("scale_out", 1.0, None, None, None, 0.25, 0.75, "agent_states"),
    ]
    names = ("cause", "join_s", "join_group_s", "leader_assign_s", "sync_group_s", "callbacks_s", "reconcile_s",
             "phase_source")
    frame = pl.DataFrame([dict(zip(names, r)) for r in rows],
                         schema_overrides={n: pl.Float64 for n in names[1:-1]})
    return frame.with_columns(pl.Series("started_at", [T0 + timedelta(minutes=i) for i in range(len(rows))]))


def test_the_longest_episodes_with_phases_in_time_order():
    phased = phased_episodes(_episodes(), limit=2)
    assert phased["cause"].to_list() == ["restart", "scale_out"]  # 2.5 s and 2.0 s; start (0.6 s) left out
    assert phased["phases_s"].to_list() == [2.5, 2.0]
    assert phased_episodes(_episodes())["cause"].to_list() == ["start", "restart", "scale_out"]
    assert phased_episodes(pl.DataFrame({"cause": ["restart"]})).height == 0  # a mart before the phase sources


def test_a_join_the_coordinator_timed_is_split_and_each_bar_states_its_precision():
    fig = episode_phases(phased_episodes(_episodes()))
    bars = {bar.name: list(bar.x) for bar in fig.data if bar.type == "bar"}
    assert [bars[s.label] for s in JOIN_STEPS] == [[0.4, 0.0, 0.0], [0.05, 0.0, 0.0], [0.05, 0.0, 0.0]]
    assert bars["join and sync (not split)"] == [0.0, 2.0, 1.0]
    assert bars["rebalance callbacks"] == [0.1, 0.5, 0.25] and bars["reconciliation (KIP-848)"] == [0.0, 0.0, 0.75]
    [words] = [list(t.text) for t in fig.data if t.type == "scatter"]
    labels = {s.name: s.label for s in PHASE_SOURCES_DECLARED}
    assert [w.split(", ", 1)[1] for w in words] == [labels["client_coordinator"], labels["client_metrics"],
                                                     labels["agent_states"]]
    assert fig.layout.barmode == "stack" and list(fig.data[0].y)[0] == "11-28 12:00:00 " + cause_label("start")
