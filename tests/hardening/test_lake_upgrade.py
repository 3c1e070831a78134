"""An existing lake goes on after an upgrade of the code that writes it.

- Tables grow: a column added to a table's declaration reaches the lake on the next write
  (Delta's schema merge), rows written before read null in it, and nothing is rebuilt: silver
  events (``later_version_json``), a gold table, a mart (``on_schema_change: append_new_columns``).
- Renamed columns are migrated in place (pipelines/migrations.py): a lake written by the landed
  head before the vocabulary (commit OLD_HEAD) reads the same figures under the new names
  (slow: the older code runs in a process of its own).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest
from pyspark.sql import functions as F

from lens_runtime.paths import home
from consumer_agent.contract import CLUSTER_UNKNOWN
from pipelines import catalog, lake, migrations, sql_build
from pipelines.gold import stage as gold_stage
from pipelines.gold import upgrade as gold_upgrade
from pipelines.gold.handoffs import ESTIMATES
from pipelines.stages import run_pipeline
from pipelines.telemetry_types import LATER_VERSION_COLUMN
from tests.support.fleets import busy_fleet, scale_out_then_crash, with_own_ids
from tests.support.lakes import fresh_config
from tests.support.pipeline_process import REPO, command
from tuning_report import write_report
from tuning_report.wording import bounded

GOLD_STAGES = ("ingest", "validate", "silver", "gold")


def test_an_older_events_table_gets_the_new_column_and_a_body_field_added_within_v1(spark, kafka, tmp_path):
    """The events table as the previous version wrote it: without ``later_version_json`` (events of a
    later schema version keep their unknown fields there) and with a ``partitions_change`` struct
    that predates ``callback_calls`` (optional within v1). Both arrive with the next events (Delta's
    schema merge, the second nested), and gold's members read the body field. One lake for both:
    each pipeline run here costs about a minute."""
    config = fresh_config(kafka, tmp_path)
    fleet = with_own_ids(scale_out_then_crash(group="upgrade"), seed=27)
    kafka.feed(config.topic, fleet.keyed()[:10])
    run_pipeline(spark, config, ("ingest", "validate"), progress=lambda _m: None)
    events = lake.read(spark, config.lake_path, catalog.EVENTS)
    older = events.drop(LATER_VERSION_COLUMN).withColumn(
        "partitions_change", F.col("partitions_change").dropFields("callback_calls"))
    older.write.format("delta").mode("overwrite").option("overwriteSchema", "true") \
        .partitionBy(*catalog.EVENTS.partition_by).save(catalog.EVENTS.location(config.lake_path))
    assert LATER_VERSION_COLUMN not in lake.read(spark, config.lake_path, catalog.EVENTS).columns

    upgraded = fleet.events[11:]  # sent by an upgraded agent: m2's callbacks call assign()
    for e in upgraded:
        if e["client_id"] == "m2" and e["kind"].startswith("partitions_"):
            e["body"]["callback_calls"] = ["assign"]
    later = {**fleet.events[10], "schema_version": 3, "zz_added_in_v3": {"x": [1, 2]}}
    kafka.feed(config.topic, fleet.keyed()[11:] + [(later["agent_id"], json.dumps(later), later["event_time_ms"])])
    run_pipeline(spark, config, GOLD_STAGES, progress=lambda _m: None)
    events = lake.read(spark, config.lake_path, catalog.EVENTS)
    assert events.count() == len(fleet.events)
    kept = events.where(F.col(LATER_VERSION_COLUMN).isNotNull()).select("event_id", LATER_VERSION_COLUMN).collect()
    assert [(r.event_id, json.loads(r[LATER_VERSION_COLUMN])["zz_added_in_v3"]) for r in kept] == \
        [(later["event_id"], {"x": [1, 2]})]
    calls = {r.event_id: r.calls for r in events.select("event_id", F.col("partitions_change.callback_calls")
                                                        .alias("calls")).collect()}
    assert {i for i, c in calls.items() if c == ["assign"]} == \
        {e["event_id"] for e in upgraded if e["body"].get("callback_calls")} != set()
    members = {r.client_id: r.callback_calls for r in lake.read(spark, config.lake_path, catalog.MEMBERS).collect()}
    assert members == {"m1": [], "m2": ["assign"]}


def _two_groups(kafka, config, held_back: int = 6):
    """Two groups' telemetry on the config's topic, the last ``held_back`` events of the first
    kept back (fed by ``rest``): a later run then recomputes that group only."""
    grows, stays = with_own_ids(scale_out_then_crash(group="grows"), seed=31), with_own_ids(busy_fleet(), seed=32)
    kafka.feed(config.topic, grows.keyed()[:-held_back] + stays.keyed())
    return lambda: kafka.feed(config.topic, grows.keyed()[-held_back:])


@pytest.mark.slow  # two gold runs over two groups (~2 min here); the default suite checks the same schema merge on
# the events table: `./lens test -m slow tests/hardening/test_lake_upgrade.py`
def test_a_gold_table_gains_a_declared_column_without_a_rebuild(spark, kafka, tmp_path, monkeypatch):
    """gold/records_processed gains a nullable column: the next gold run writes it for the group it
    recomputes (its stored hours read through the declaration, the new column null), and the
    other group's rows stay as they were, null in it."""
    config = fresh_config(kafka, tmp_path)
    rest = _two_groups(kafka, config)
    run_pipeline(spark, config, GOLD_STAGES, progress=lambda _m: None)
    before = {(r.group_id, r.hour_start): r.records_processed
              for r in lake.read(spark, config.lake_path, catalog.PROCESSED).collect()}

    grown = dataclasses.replace(catalog.PROCESSED, columns=(*catalog.PROCESSED.columns, ("progress_rows", "bigint")))
    counted = gold_stage.records_processed
    monkeypatch.setattr(catalog, "PROCESSED", grown)
    monkeypatch.setattr(gold_stage, "records_processed",
                        lambda events: counted(events).withColumn("progress_rows", F.lit(7).cast("bigint")))
    rest()
    run_pipeline(spark, config, GOLD_STAGES, progress=lambda _m: None)

    table = lake.read(spark, config.lake_path, grown)
    assert table.schema == grown.schema()
    rows = {(r.group_id, r.hour_start): r for r in table.collect()}
    assert {k: r.progress_rows for k, r in rows.items() if k[0] == "busy"} == \
        {k: None for k in before if k[0] == "busy"}  # not recomputed: as they were
    assert {r.progress_rows for k, r in rows.items() if k[0] == "grows"} == {7}
    assert all(rows[k].records_processed == v for k, v in before.items() if k[0] == "busy")
    assert lake.version(spark, config.lake_path, grown) == 1  # created by the first run, one replace by the second


@pytest.mark.slow  # two pipeline runs with their SQL builds (~5 min here)
def test_a_mart_gains_a_column_without_a_rebuild(spark, kafka, tmp_path, monkeypatch):
    """A model that selects one more column: the next incremental build appends it to the mart
    (on_schema_change: append_new_columns) and fills it for the groups it recomputes; the other
    group's rows keep their figures, null in the new column."""
    config = fresh_config(kafka, tmp_path)
    rest = _two_groups(kafka, config)
    run_pipeline(spark, config, progress=lambda _m: None)
    mart = f"{sql_build.marts_path(config.lake_path)}/group_hourly_costs"
    before = pl.read_delta(mart)

    project = tmp_path / "dbt_like_sql"
    shutil.copytree(sql_build.PROJECT, project, ignore=shutil.ignore_patterns("target", "logs"))
    model = project / "models" / "marts" / "group_hourly_costs.sql"
    model.write_text(model.read_text().replace("    duplicate_rate,\n", "    duplicate_rate,\n    1 as added_flag,\n"))
    monkeypatch.setattr(sql_build, "PROJECT", project)
    rest()
    run_pipeline(spark, config, progress=lambda _m: None)

    after = pl.read_delta(mart)
    assert after.columns == [*before.columns, "added_flag"]  # appended: the mart was not rebuilt
    assert set(after.filter(pl.col("group_id") == "grows")["added_flag"].to_list()) == {1}
    kept = after.filter(pl.col("group_id") == "busy")
    assert kept["added_flag"].null_count() == kept.height > 0
    assert kept.drop("added_flag").sort("period_start").equals(
        before.filter(pl.col("group_id") == "busy").sort("period_start"))


# --- a lake written by the landed head, before the vocabulary ---------------------------------

OLD_HEAD = "c410cee"  # main's head when the measures got one name each (pipelines/measures.py)
MART_KEYS = {"group_hourly_costs": ("group_id", "period_start"), "group_daily_costs": ("group_id", "day"),
             "group_cause_costs": ("group_id", "cause"), "member_costs": ("group_id", "agent_id"),
             "host_costs": ("group_id", "host"), "rebalance_episodes": ("episode_id",),
             "episode_handoffs": ("handoff_id",), "config_comparison": ("group_id", "config"),
             "open_recommendations": ("group_id", "rank"), "recommendation_checks": ("group_id", "verified_at")}


def _older_checkout(where: Path) -> Path:
    """The landed head's tree, from this clone's history (``git archive``)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", OLD_HEAD], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"commit {OLD_HEAD} is not in this clone's history (a shallow clone?): "
                    f"{archive.stderr.decode().strip()}")
    where.mkdir()
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
    return where


def _run_older(older: Path, config) -> None:
    """``pipeline run all`` of the older code, in its own process (its own JVM and imports)."""
    env = {**os.environ, "PYTHONPATH": str(older), "REBALANCE_LENS_HOME": str(home()), "LENS_SPARK_LOG_LEVEL": "ERROR"}
    done = subprocess.run(command(config), cwd=older, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def _as_now(rewrite: migrations.Rewrite, text: str) -> str:
    """An older stored text as the migrations leave it: the rename's rewrite, then the cluster's."""
    text = rewrite.apply(text)
    return migrations.CLUSTER_EVIDENCE.apply(text) if rewrite.column == migrations.CLUSTER_EVIDENCE.column else text


def _keyed(rows: list[dict], keys: tuple[str, ...]) -> dict[tuple, dict]:
    out = {tuple(r[k] for k in keys): r for r in rows}
    assert len(out) == len(rows), keys
    return out


def _paired(migration, older: dict[tuple, dict], newer: dict[tuple, dict], skip: set[str]) -> list[str]:
    """Where a row's figure under its new name differs from the older row's under the older name."""
    back = {r.new: r.old for r in migration.renames}
    assert older.keys() == newer.keys(), migration.path
    return [f"{migration.path} {key} {name}: older {older[key][back.get(name, name)]!r}, now {value!r}"
            for key, row in newer.items() for name, value in row.items()
            if name not in skip and not _same(older[key][back.get(name, name)], value)]


def _lower_bound_sums(old_handoffs: list[dict], old_metrics: list[dict], new_marts: dict[str, dict]) -> dict:
    """The marts' pause per the rule (the point figure: each handoff's lower bound), from the
    older gold (read as the marts are, by polars), by mart and key."""
    def total(rows: list[dict], key_of, column: str) -> dict:
        out: dict = defaultdict(float)
        for r in rows:
            out[key_of(r)] += r[column]
        return out

    def metrics(grain: str, cause_all: bool) -> list[dict]:
        return [m for m in old_metrics if m["grain"] == grain and (m["cause"] == "all") == cause_all]

    lower = "partition_seconds_unavailable_lower"
    known = [h for h in old_handoffs if h["unavailable_lower_s"] is not None]
    members = total([h for h in known if h["cause"] != "start"], lambda h: (h["group_id"], h["prev_agent_id"]),
                    "unavailable_lower_s")
    hosts: dict = defaultdict(float)
    for (group, agent), row in new_marts["member_costs"].items():
        hosts[(group, row["host"] or "unknown")] += members[(group, agent)]
    return {
        "group_hourly_costs": total(metrics("hour", True), lambda m: (m["group_id"], m["period_start"]), lower),
        "group_daily_costs": total(metrics("day", True), lambda m: (m["group_id"], m["period_start"].date()), lower),
        "group_cause_costs": total(metrics("day", False), lambda m: (m["group_id"], m["cause"]), lower),
        "member_costs": members, "host_costs": hosts,
        "rebalance_episodes": total(known, lambda h: (h["episode_id"],), "unavailable_lower_s"),
        "episode_handoffs": total(known, lambda h: (h["handoff_id"],), "unavailable_lower_s"),
    }


@pytest.mark.slow  # the older pipeline in its own process, then the new one over its lake (~10 min here)
def test_a_lake_of_the_landed_head_reads_the_same_figures_under_the_new_names(spark, kafka, tmp_path):
    config = fresh_config(kafka, tmp_path)
    fleets = (with_own_ids(scale_out_then_crash(group="older-a"), seed=41), with_own_ids(busy_fleet(), seed=42))
    kafka.feed(config.topic, [record for fleet in fleets for record in fleet.keyed()])
    _run_older(_older_checkout(tmp_path / "older"), config)

    gold_tables = [m for m in migrations.GOLD if lake.exists(spark, config.lake_path, migrations.TABLES[m.path])]
    assert {m.path for m in gold_tables} >= {"gold/handoffs", "gold/metrics", "gold/what_if", "gold/recommendations"}
    older_gold = {m.path: [r.asDict(recursive=True)
                           for r in lake.read(spark, config.lake_path, migrations.TABLES[m.path]).collect()]
                  for m in gold_tables}
    read_as_marts = {t.path: pl.read_delta(t.location(config.lake_path)).to_dicts()  # timestamps as the marts have them
                     for t in (catalog.HANDOFFS, catalog.METRICS)}
    marts_root = Path(sql_build.marts_path(config.lake_path))
    older_marts = {m.path: pl.read_delta(str(marts_root / m.path.split("/", 1)[1])).to_dicts()
                   for m in migrations.MARTS}

    said: list[str] = []
    run_pipeline(spark, config, progress=said.append)
    for migration in gold_tables:  # one line per migration of a table, saying what changed
        estimates = [gold_upgrade.ESTIMATES_SAID] if migration.path == catalog.HANDOFFS.path else []
        assert [line for line in said if line.startswith(f"{migration.path}: ")] == \
            [migrations.cluster_said(migration.path), migration.said(), *estimates]
    for migration in migrations.MARTS:
        name = migration.path.split("/", 1)[1]
        estimates = [line for line in said if line.startswith(f"{migration.path}: rebuilt, added the estimates")]
        assert [line for line in said if line.startswith(f"{migration.path}: ")] == \
            [migrations.cluster_said(migration.path, "rebuilt, "), migration.said("rebuilt, "), *estimates]
        assert len(estimates) == (name in migrations.ESTIMATE_MARTS)
    assert migrations.migrate(spark, config.lake_path) == [] and migrations.stale_marts(spark, config.lake_path) == []
    assert gold_upgrade.upgrade(spark, config.lake_path) == []

    # gold: every figure under its new name; the dropped exact-or-null columns are where the bounds meet
    for migration in gold_tables:
        table = migrations.TABLES[migration.path]
        newer = [r.asDict(recursive=True) for r in lake.read(spark, config.lake_path, table).collect()]
        assert lake.read(spark, config.lake_path, table).schema == table.schema()
        keys = tuple(k for k in table.keys if k != migrations.CLUSTER)  # the older tables' keys
        older, now = _keyed(older_gold[migration.path], keys), _keyed(newer, keys)
        added = set(ESTIMATES)  # added since: checked below
        assert _paired(migration, older, now, {migrations.CLUSTER, *added, *(w.column for w in migration.rewrites)}) \
            == []
        assert {r[migrations.CLUSTER] for r in newer} == {CLUSTER_UNKNOWN}  # its agents sent none
        for w in migration.rewrites:
            assert {k: _as_now(w, r[w.column]) for k, r in older.items()} == {k: r[w.column] for k, r in now.items()}
    handoffs = {r["handoff_id"]: r for r in
                (r.asDict() for r in lake.read(spark, config.lake_path, catalog.HANDOFFS).collect())}
    for h in older_gold["gold/handoffs"]:
        now = handoffs[h["handoff_id"]]
        assert (h["unavailable_s"] is not None) <= (now["pause_s"] == now["pause_upper_s"] == h["unavailable_s"])
        assert (h["duplicates_confirmed"] is not None) <= \
            (now["duplicates"] == now["duplicates_upper"] == h["duplicates_confirmed"])
        assert (h["duplicates_confirmed"] is not None) <= (now["duplicates_estimate"] == h["duplicates_confirmed"])
    assert any(h["unavailable_s"] is None and h["unavailable_lower_s"] for h in older_gold["gold/handoffs"])  # a bound
    for r in lake.read(spark, config.lake_path, catalog.RECOMMENDATIONS).collect():  # the stored SQL runs
        spark.sql(r.evidence_query, args={"cluster_id": r.cluster_id, "group_id": r.group_id}).collect()

    # marts: rebuilt under the new names; the pause is the point figure (the lower bound where bounded)
    newer_marts = {m.path: _keyed(pl.read_delta(str(marts_root / m.path.split("/", 1)[1])).to_dicts(),
                                  MART_KEYS[m.path.split("/", 1)[1]]) for m in migrations.MARTS}
    by_name = {m.path.split("/", 1)[1]: newer_marts[m.path] for m in migrations.MARTS}
    expected_pause = _lower_bound_sums(read_as_marts["gold/handoffs"], read_as_marts["gold/metrics"], by_name)
    follows_the_pause = {"resumed_at", "cost_rank"}  # derived from it: checked below
    for migration in migrations.MARTS:
        name = migration.path.split("/", 1)[1]
        changed = {r.new for r in migration.renames if r.note}
        older = _keyed(older_marts[migration.path], MART_KEYS[name])
        rewritten = {w.column for w in migration.rewrites}
        skip = changed | follows_the_pause | rewritten | {migrations.CLUSTER} | set(ESTIMATES)
        assert _paired(migration, older, newer_marts[migration.path], skip) == [], name
        for w in migration.rewrites:
            assert {k: r[w.column] for k, r in newer_marts[migration.path].items()} == \
                {k: _as_now(w, r[w.column]) for k, r in older.items()}, name
        if "pause_s" in changed:
            assert {k: r["pause_s"] for k, r in newer_marts[migration.path].items()} == \
                pytest.approx({k: expected_pause[name].get(k, 0.0) for k in newer_marts[migration.path]}), name
    assert sum(expected_pause["episode_handoffs"].values()) > sum(
        r["paused_s"] for r in older_marts["marts/episode_handoffs"])  # the crashes' lower bounds now count
    for r in by_name["episode_handoffs"].values():
        assert r["resumed_at"] == r["released_at"] + timedelta(milliseconds=int(r["pause_s"] * 1000))
    for group in {g for g, _ in by_name["member_costs"]}:
        ranked = sorted((r for (g, _), r in by_name["member_costs"].items() if g == group),
                        key=lambda r: (-r["duplicates"], -r["pause_s"], r["agent_id"]))
        assert [r["cost_rank"] for r in ranked] == list(range(1, len(ranked) + 1))

    # the report reads the new names: each group's headline is the older figures, the pause per the rule
    html = write_report(config.lake_path, tmp_path / "report", progress=lambda _m: None).read_text()
    for group in {r["group_id"] for r in older_marts["marts/group_daily_costs"]}:
        daily = [m for m in read_as_marts["gold/metrics"]
                 if m["group_id"] == group and m["grain"] == "day" and m["cause"] == "all"]
        pause = bounded(sum(m["partition_seconds_unavailable_lower"] for m in daily),
                        sum(m["partition_seconds_unavailable_upper"] for m in daily), ",.1f")
        older_daily = [r for r in older_marts["marts/group_daily_costs"] if r["group_id"] == group]
        duplicates = bounded(sum(r["duplicates"] for r in older_daily), sum(r["duplicates_upper"] for r in older_daily))
        assert f"paused partition-seconds<b>{pause}</b>" in html, group
        assert f"duplicated records<b>{duplicates}</b>" in html, group
