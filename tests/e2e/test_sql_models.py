"""The SQL models (dbt_like_sql/) on the scenarios' lake: built by the pipeline's last stage
(their rules checked as they are written, the tests that need a query run on what it wrote), the
whole suite passing over every row, readable without a JVM (polars, then DuckDB over the Arrow
table), and equal to the gold tables and the recommendations they are built from."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import duckdb
import polars as pl
import yaml
import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from lens_runtime.errors import LensError
from pipelines import catalog, lake, sql_build

MARTS = ("group_hourly_costs", "group_daily_costs", "group_cause_costs", "member_costs", "host_costs",
         "config_comparison", "commit_on_revoke_daily", "open_recommendations", "rebalance_episodes",
         "quarantine_daily", "agent_telemetry_quality", "episode_handoffs", "fleet_group_costs", "source_agreement")


def _mart(landed, name: str) -> pl.DataFrame:
    """A mart read the way a notebook would: polars over the Delta table (deletion vectors included)."""
    return pl.read_delta(str(Path(sql_build.marts_path(landed["config"].lake_path)) / name))


def test_the_pipeline_ends_with_the_sql_build_and_every_data_test_passes(spark, landed):
    path = landed["config"].lake_path  # the whole build records what it covered: the next one starts after it
    assert lake.stage_mark(spark, path, sql_build.SQL_STAGE) == lake.stage_mark(spark, path, "gold") >= 0
    built = landed["results"]["sql"]
    assert built["failed"] == 0 and built["passed"] == built["nodes"] - built["warned"]
    # 14 marts and the 12 staging and intermediate views they read, then the marts' uniqueness and
    # relationships tests (their other rules are the tables' constraints)
    assert built["nodes"] >= 14 + 12 + 12


def test_the_whole_suite_passes_over_every_row(spark, landed):
    """What the daily run checks: every data test unscoped, the staging and intermediate ones (the
    lake's contract) and the unit tests (the models' SQL on fixed rows)."""
    suite = sql_build.check(spark, landed["config"].lake_path, progress=lambda _m: None)
    assert suite["failed"] == 0 and suite["passed"] == suite["nodes"] - suite["warned"]
    assert suite["nodes"] > 60 + 12  # its tests and the views they read


def test_every_mart_reads_without_a_jvm(landed):
    for name in MARTS:
        frame = _mart(landed, name)
        assert frame.columns, name
    db = duckdb.connect()
    db.register("hourly", _mart(landed, "group_hourly_costs").to_arrow())
    total = db.execute("select sum(duplicates) from hourly").fetchone()[0]
    assert total == _mart(landed, "group_hourly_costs")["duplicates"].sum() > 0


def test_marts_equal_the_gold_tables(spark, landed):
    path = landed["config"].lake_path
    metrics = lake.read(spark, path, catalog.METRICS).where("grain = 'hour' and cause = 'all'").collect()
    gold = defaultdict(int)
    for r in metrics:
        gold[r.group_id] += r.duplicates
    hourly = _mart(landed, "group_hourly_costs").group_by("group_id").agg(pl.col("duplicates").sum())
    assert dict(hourly.iter_rows()) == dict(gold)

    handoffs = lake.read(spark, path, catalog.HANDOFFS).where("cause != 'start'").collect()
    by_group = defaultdict(int)
    for h in handoffs:
        by_group[h.group_id] += h.duplicates or 0
    members = _mart(landed, "member_costs").group_by("group_id").agg(pl.col("duplicates").sum())
    assert dict(members.iter_rows()) == {g: d for g, d in by_group.items()}

    episodes = lake.read(spark, path, catalog.EPISODES).count()
    assert _mart(landed, "rebalance_episodes").height == episodes
    assert _mart(landed, "config_comparison").height == lake.read(spark, path, catalog.WHAT_IF).count()


def test_open_recommendations_show_what_recommend_shows(landed):
    figures = ("title", "predicted_duplicates_saved", "predicted_pause_saved_s")  # the same names in gold and the mart
    expected = {(r["group_id"], r["rank"]): tuple(r[f] for f in figures)
                for r in landed["recommendations"] if r["kind"] != "healthy"}
    mart = _mart(landed, "open_recommendations")
    found = {(r["group_id"], r["rank"]): tuple(r[f] for f in figures) for r in mart.iter_rows(named=True)}
    assert found == expected and found


@pytest.mark.slow  # a SQL build of every mart (~40 s) to find it changed nothing
def test_a_build_with_no_new_events_changes_no_mart(spark, landed):
    marts = Path(sql_build.marts_path(landed["config"].lake_path))
    before = {name: _history(spark, marts / name)[-1].version for name in MARTS}
    sql_build.build(spark, landed["config"].lake_path, select=list(MARTS), progress=lambda _m: None)
    for name in MARTS:  # each scope is empty: the mart writes nothing, not even an empty commit
        assert _history(spark, marts / name)[-1].version == before[name], name


def test_an_incremental_build_replaces_every_row_of_a_changed_group_in_one_write(spark, landed):
    """A row its group no longer produces (an episode merged away, a member whose handoffs moved) is deleted,
    not left stale, in the same commit that rewrites the group's other rows."""
    path = str(Path(sql_build.marts_path(landed["config"].lake_path)) / "member_costs")
    built = spark.read.format("delta").load(path)
    expected = sorted(tuple(r) for r in built.collect())
    stale = built.limit(1).withColumn("agent_id", F.lit("an-agent-the-group-no-longer-has"))
    stale.write.format("delta").mode("append").save(path)
    version = _history(spark, Path(path))[-1].version
    lake_path = landed["config"].lake_path
    mark = lake.stage_mark(spark, lake_path, sql_build.SQL_STAGE)
    lake.set_stage_mark(spark, lake_path, sql_build.SQL_STAGE, -1)  # as if no build had seen any event yet
    try:
        sql_build.build(spark, lake_path, select=["member_costs"], progress=lambda _m: None)
    finally:
        lake.set_stage_mark(spark, lake_path, sql_build.SQL_STAGE, mark)
    commits = [h for h in _history(spark, Path(path)) if h.version > version]
    assert [(h.operation, h.operationParameters["mode"]) for h in commits] == [("WRITE", "Overwrite")]
    assert "xxhash64(" in commits[0].operationParameters["predicate"]  # by the scope's keys
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == expected


def _history(spark, path: Path) -> list:
    return sorted(DeltaTable.forPath(spark, str(path)).history().collect(), key=lambda h: h.version)


def test_a_selector_that_matches_nothing_names_itself(spark, landed):
    with pytest.raises(LensError, match="no-such-model"):
        sql_build.build(spark, landed["config"].lake_path, select=["no-such-model"], progress=lambda _m: None)


def test_each_marts_yaml_states_its_grain_and_documents_every_column(landed):
    for name in MARTS:
        spec = yaml.safe_load((sql_build.PROJECT / "models" / "marts" / f"{name}.yml").read_text())["models"][0]
        assert spec["description"].startswith("Grain: "), name
        assert sorted(c["name"] for c in spec["columns"]) == sorted(_mart(landed, name).columns), name


def test_source_freshness_says_the_telemetry_just_landed_is_fresh(spark, landed):
    [(source, status, age_s)] = sql_build.freshness(spark, landed["config"].lake_path)
    assert (source, status) == ("events", "pass") and 0 <= age_s < 2 * 3600
