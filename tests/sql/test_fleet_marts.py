"""The fleet view's marts, built by dbt over gold tables written directly (tests/support/fleet_gold.py: a
group the agent sees, one the agent and the broker both see, one only the broker sees, a quiet broker-only
group, one group id on two clusters): every group is a row of ``fleet_group_costs``, costliest first, with
what the broker alone saw (bounds) apart from what the agent saw exactly and both coverage figures;
``source_agreement`` counts the broker's misses; the handoff and episode marts carry where each figure came
from. One SQL build of four marts (about a minute with Spark's start)."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

from pipelines import lake, sql_build
from tests.support.fleet_gold import small_fleet

MARTS = ["fleet_group_costs", "source_agreement", "episode_handoffs", "rebalance_episodes"]


@pytest.fixture(scope="module")
def marts(spark, tmp_path_factory) -> dict[str, pl.DataFrame]:
    lake_path = str(tmp_path_factory.mktemp("fleet") / "lake")
    for table, rows in small_fleet().items():
        lake.rewrite(spark, lake_path, table, spark.createDataFrame(rows, table.schema()))
    lake.set_stage_mark(spark, lake_path, "gold", 3)
    counts = sql_build.build(spark, lake_path, select=MARTS, progress=lambda _m: None)
    assert counts["failed"] == 0 and counts["passed"] > len(MARTS)  # the models and their data tests
    root = Path(sql_build.marts_path(lake_path))
    return {name: pl.read_delta(str(root / name)) for name in MARTS}


def _by_group(frame: pl.DataFrame) -> dict[tuple[str, str], dict]:
    return {(r["cluster_id"], r["group_id"]): r for r in frame.iter_rows(named=True)}


def test_every_group_is_a_row_costliest_first_with_its_bounded_part_and_both_coverages(marts):
    fleet = marts["fleet_group_costs"].sort("cost_rank")
    assert [(r["cluster_id"], r["group_id"]) for r in fleet.iter_rows(named=True)] == [
        ("eu", "audit"), ("eu", "billing"), ("eu", "orders"), ("us", "orders"), ("eu", "quiet")]
    assert fleet["cost_rank"].to_list() == [1, 2, 3, 4, 5]
    rows = _by_group(fleet)

    audit = rows[("eu", "audit")]  # only the broker's log: every figure a bound, one pause still open
    assert audit["source"] == "broker" and audit["handoffs"] == audit["broker_handoffs"] == 2
    assert (audit["duplicates"], audit["duplicates_upper"], audit["duplicates_estimate"]) == (2, 2050, 902)
    assert (audit["pause_s"], audit["pause_upper_s"], audit["pause_estimate_s"]) == (4.0, 33.0, 15.0)
    assert (audit["duplicates_upper_from_broker"], audit["pause_upper_from_broker_s"]) == (2050, 33.0)
    assert (audit["coverage"], audit["broker_coverage"]) == (0.0, 1.0)

    billing = rows[("eu", "billing")]  # the agent's exact figure, and a handoff of a member without it
    assert billing["source"] == "both" and (billing["handoffs"], billing["broker_handoffs"]) == (2, 1)
    assert (billing["duplicates"], billing["duplicates_upper"], billing["duplicates_estimate"]) == (5, 305, 125)
    assert (billing["duplicates_from_broker"], billing["duplicates_upper_from_broker"]) == (0, 300)
    assert (billing["pause_from_broker_s"], billing["pause_upper_from_broker_s"]) == (0.5, 9.5)
    assert (billing["coverage"], billing["broker_coverage"]) == (0.6, 1.0)

    orders = rows[("eu", "orders")]  # exact: its bounds meet, nothing from the broker
    assert orders["source"] == "agent" and orders["duplicates"] == orders["duplicates_upper"] == 50
    assert orders["duplicates_upper_from_broker"] == 0 and orders["broker_coverage"] is None
    assert rows[("us", "orders")]["duplicates"] == 1  # one group id, two clusters: two rows

    quiet = rows[("eu", "quiet")]  # no rebalance, but the broker saw its members hold partitions
    assert quiet["source"] == "broker" and quiet["rebalances"] == quiet["handoffs"] == 0
    assert quiet["broker_covered_s"] == 20.0 and quiet["broker_coverage"] == 1.0


def test_the_quality_mart_counts_the_agents_figures_outside_the_brokers_bounds(marts):
    agreement = marts["source_agreement"].sort("figure")
    assert agreement.select("group_id", "figure", "handoffs", "outside", "outside_share").rows() == [
        ("billing", "duplicates", 4, 1, 0.25), ("billing", "pause_s", 4, 0, 0.0)]


def test_the_handoff_and_episode_marts_say_where_each_figure_came_from(marts):
    handoffs = marts["episode_handoffs"]
    sources = {(r["group_id"], r["partition"]): (r["source"], r["cause_confidence"])
               for r in handoffs.filter(pl.col("cluster_id") == "eu").iter_rows(named=True)}
    assert sources[("billing", 0)] == ("both", "exact") and sources[("billing", 1)] == ("broker", "probable")
    assert sources[("orders", 0)] == ("agent", "exact")
    window = handoffs.filter(pl.col("group_id") == "audit").sort("partition").row(0, named=True)
    assert window["stopped_by_at"] > window["stopped_after_at"]
    episodes = _by_group(marts["rebalance_episodes"])
    assert {g: e["source"] for g, e in episodes.items()} == {
        ("eu", "orders"): "agent", ("us", "orders"): "agent", ("eu", "billing"): "both", ("eu", "audit"): "broker"}
    assert episodes[("eu", "audit")]["duplicates_estimate"] == 902


def test_each_new_mart_states_its_grain_and_documents_every_column(marts):
    for name in ("fleet_group_costs", "source_agreement"):
        spec = yaml.safe_load((sql_build.PROJECT / "models" / "marts" / f"{name}.yml").read_text())["models"][0]
        assert spec["description"].startswith("Grain: "), name
        assert sorted(c["name"] for c in spec["columns"]) == sorted(marts[name].columns), name
