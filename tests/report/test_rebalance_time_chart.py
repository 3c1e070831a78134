"""The rebalance time chart: per cause, the episodes' phases stacked (join and sync, callbacks,
KIP-848 reconciliation), from the rebalance_episodes mart's rows."""
from __future__ import annotations

import polars as pl
import pytest

from pipelines.vocabulary import REBALANCE_PHASES
from tuning_report.figures import cause_label, rebalance_time, rebalance_time_by_cause

pytestmark = pytest.mark.fast


def _episodes(**columns) -> pl.DataFrame:
    return pl.DataFrame({"cause": ["restart", "restart", "crash", "start"], **columns},
                        schema_overrides={n: pl.Float64 for n in columns})


def test_each_cause_stacks_its_episodes_phases_the_most_first_and_an_episode_without_phases_is_left_out():
    episodes = _episodes(join_s=[1.0, 2.0, None, None], callbacks_s=[0.5, None, 0.25, None],
                         reconcile_s=[None, None, 4.0, None])
    by_cause = rebalance_time_by_cause(episodes)
    assert by_cause.to_dicts() == [
        {"cause": "crash", "episodes": 1, "join_s": 0.0, "callbacks_s": 0.25, "reconcile_s": 4.0, "total_s": 4.25},
        {"cause": "restart", "episodes": 2, "join_s": 3.0, "callbacks_s": 0.5, "reconcile_s": 0.0, "total_s": 3.5}]
    fig = rebalance_time(by_cause)
    assert fig.layout.barmode == "stack"
    assert [bar.name for bar in fig.data] == [p.label for p in REBALANCE_PHASES]
    assert [list(bar.y) for bar in fig.data] == [[0.0, 3.0], [0.25, 0.5], [4.0, 0.0]]
    assert list(fig.data[0].x) == [cause_label("crash"), cause_label("restart")]


def test_a_mart_without_the_phases_or_with_none_shown_draws_nothing():
    assert rebalance_time_by_cause(pl.DataFrame({"cause": ["restart"]})).height == 0
    assert rebalance_time_by_cause(_episodes(join_s=[None] * 4, callbacks_s=[None] * 4,
                                             reconcile_s=[None] * 4)).height == 0
