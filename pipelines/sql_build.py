"""The SQL stage: build the dbt project in ``dbt_like_sql/`` (staging, intermediate, marts)
and run its data tests, in-process, on the pipeline's SparkSession.

dbt-spark's ``session`` method takes the active SparkSession (``getOrCreate``), so the
models run with the pipeline's jars, settings and ``--master``. The session's catalog is
in memory, so each build first registers the lake's tables (the sources, schema
``lens_lake``) and the marts earlier builds wrote (Delta tables under ``<lake>/marts``,
schema ``lens_marts``) as external tables: an incremental mart then merges into what is
there. dbt-spark turns ANSI mode off on the session; the build puts it back.

A lake written under older column names is renamed first (``pipelines.migrations``: gold's
tables in place; the marts under older names are rebuilt whole by this build, passed to dbt
as the var ``rebuild``, dbt_like_sql/macros/rebuild.sql). A mart that gains a column keeps
its rows and gets the column (``on_schema_change: append_new_columns``).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from lens_runtime.errors import LensError
from pipelines import catalog, lake, migrations
from pipelines.gold import upgrade as gold_upgrade
from pipelines.config import PipelineConfig, Progress, describe

PROJECT = Path(__file__).resolve().parents[1] / "dbt_like_sql"
SOURCE_SCHEMA = "lens_lake"
MART_SCHEMA = "lens_marts"  # profiles.yml's schema
SQL_STAGE = "sql"  # its stage mark: the gold mark of the last whole build (what the marts reflect)
# dbt source name -> the lake table (models/staging/__sources.yml declares the same names)
SOURCES = {"events": catalog.EVENTS, "quarantine": catalog.QUARANTINE, "stage_progress": catalog.STAGE_PROGRESS,
           "handoffs": catalog.HANDOFFS, "episodes": catalog.EPISODES, "members": catalog.MEMBERS,
           "protocol_phases": catalog.PROTOCOL_PHASES, "coverage": catalog.COVERAGE,
           "source_agreement": catalog.SOURCE_AGREEMENT,
           "metrics": catalog.METRICS, "what_if": catalog.WHAT_IF, "recommendations": catalog.RECOMMENDATIONS,
           "verifications": catalog.VERIFICATIONS}


def marts_path(lake_path: str) -> str:
    return f"{lake_path.rstrip('/')}/marts"


def docs_path(lake_path: str) -> Path:
    """Where ``dbt docs generate`` writes the site (index.html with the catalog and lineage)."""
    return Path(lake_path) / "_dbt" / "target"


def log_path(lake_path: str) -> Path:
    return Path(lake_path) / "_dbt" / "logs" / "dbt.log"


def _reset_schema(spark: SparkSession, schema: str) -> None:
    """An empty ``schema``: earlier builds in this session may point at another lake.
    Its tables are external (a path of their own), so dropping them drops names, not data."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    for table in spark.catalog.listTables(schema):
        kind = "VIEW" if table.tableType == "VIEW" else "TABLE"
        spark.sql(f"DROP {kind} IF EXISTS {schema}.`{table.name}`")


def register_sources(spark: SparkSession, lake_path: str) -> None:
    """The lake's tables as ``lens_lake.<source>``; a table no stage has written yet is an
    empty one of its declared schema (a fresh lake's quarantine, say)."""
    _reset_schema(spark, SOURCE_SCHEMA)
    for name, table in SOURCES.items():
        if lake.exists(spark, lake_path, table):
            spark.catalog.createTable(f"{SOURCE_SCHEMA}.{name}", path=table.location(lake_path), source="delta")
        else:
            _clear_placeholder(spark, name)
            spark.catalog.createTable(f"{SOURCE_SCHEMA}.{name}", source="delta", schema=table.schema())


def _clear_placeholder(spark: SparkSession, name: str) -> None:
    """Delete the folder an earlier process's empty placeholder of ``name`` left in the
    warehouse: Spark's in-memory catalog forgets the table with its process, not its folder, and
    the next build's createTable over it failed (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION:
    a second `pipeline run` on a lake without closed-loop checks). The folder holds no rows, and
    one build at a time writes a lake (pipelines/lake_lock.py). Through Hadoop's file system, so
    a warehouse on object storage (a lake on s3a://) is cleared as a local one is."""
    jvm = spark.sparkContext._jvm
    folder = jvm.org.apache.hadoop.fs.Path(f"{spark.catalog.getDatabase(SOURCE_SCHEMA).locationUri}/{name}")
    folder.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(folder, True)


def register_marts(spark: SparkSession, lake_path: str) -> None:
    """The marts earlier builds wrote to this lake, as ``lens_marts.<model>``."""
    _reset_schema(spark, MART_SCHEMA)
    root = Path(marts_path(lake_path))
    found = sorted(p.name for p in root.iterdir() if (p / "_delta_log").is_dir()) if root.is_dir() else []
    for name in found:
        spark.catalog.createTable(f"{MART_SCHEMA}.{name}", path=str(root / name), source="delta")


def _dbt(spark: SparkSession, lake_path: str, *commands: list[str], built_through: int = -1,
         rebuild: Sequence[str] = ()):
    """Run dbt ``commands`` in turn on this session over the lake; the last one's result.
    ``built_through``: the marts recompute, and the data tests read, only what was validated
    after this batch (dbt_like_sql/macros/incremental_scope.sql); -1: everything. ``rebuild``:
    marts rebuilt whole whatever ``built_through`` says (dbt_like_sql/macros/rebuild.sql)."""
    from dbt.cli.main import dbtRunner

    if not lake.exists(spark, lake_path, catalog.STAGE_PROGRESS):
        raise LensError(f"no pipeline output in {lake_path}: run `rebalance-lens pipeline run` first")
    register_sources(spark, lake_path)
    register_marts(spark, lake_path)
    target = docs_path(lake_path)
    variables = {"lake": lake_path.rstrip("/"), "built_through": built_through, "rebuild": list(rebuild)}
    common = ["--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT), "--target-path", str(target),
              "--log-path", str(log_path(lake_path).parent), "--vars", json.dumps(variables), "--quiet"]
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    try:
        for command in commands:
            result = dbtRunner().invoke([*command, *common])
            if result.exception is not None:
                raise LensError(f"dbt {command[0]} could not run: {result.exception}") from result.exception
            if command is not commands[-1] and not result.success:
                raise LensError(f"dbt {' '.join(command)} failed: see {log_path(lake_path)}")
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
    return result


def build(spark: SparkSession, lake_path: str, select: Sequence[str] = (), progress: Progress = print,
          full_refresh: bool = False) -> dict[str, int]:
    """``dbt build``: models and their tests in dependency order; counts of what ran, passed
    and failed. Raises ``LensError`` naming what failed. The caller holds the lake's lock (a
    lake under older column names is migrated first)."""
    if lake.exists(spark, lake_path, catalog.STAGE_PROGRESS):
        migrations.migrate(spark, lake_path, progress)
        gold_upgrade.upgrade(spark, lake_path, progress)
    rebuild = migrations.stale_marts(spark, lake_path, progress)
    # What the last whole build covered is not recomputed (a partial build marks nothing).
    built_through = -1 if full_refresh else lake.stage_mark(spark, lake_path, SQL_STAGE)
    # The staging and intermediate tests re-check the lake's own contract (validated upstream)
    # and read whole tables: a build that rebuilds everything runs them, an incremental one
    # tests the marts it wrote, in the groups it recomputed.
    contract_tests = [] if built_through < 0 else [
        "--exclude", "path:models/staging,test_type:data", "path:models/intermediate,test_type:data"]
    build_args = ["build", *(["--select", *select] if select else []), *contract_tests,
                  *(["--full-refresh"] if full_refresh else [])]
    # the selected models read the staging and intermediate views: (re)create them first
    before = [["run", "--select", "config.materialized:view"]] if select else []
    gold_mark = lake.stage_mark(spark, lake_path, "gold")
    result = _dbt(spark, lake_path, *before, build_args, built_through=built_through, rebuild=rebuild)
    statuses = [str(r.status) for r in (result.result or [])]
    failed = [r.node.name for r in (result.result or []) if str(r.status) in ("error", "fail")]
    counts = {"nodes": len(statuses), "failed": len(failed),
              "passed": sum(s in ("success", "pass") for s in statuses), "warned": statuses.count("warn")}
    if select and not statuses:
        raise LensError(f"--select {' '.join(select)} matches no model or test: name models as in "
                        f"{PROJECT / 'models'} (e.g. group_hourly_costs, marts, +open_recommendations)")
    progress(f"sql: dbt build {describe(counts)}")
    if failed:
        raise LensError(f"dbt build: {len(failed)} failed ({', '.join(failed[:5])}): see {log_path(lake_path)}")
    if not select:
        lake.set_stage_mark(spark, lake_path, SQL_STAGE, gold_mark)
    return counts


def docs(spark: SparkSession, lake_path: str) -> Path:
    """``dbt docs generate``: the documentation site (models, columns, tests, lineage); its folder."""
    if not _dbt(spark, lake_path, ["docs", "generate"]).success:
        raise LensError(f"dbt docs generate failed: see {log_path(lake_path)}")
    return docs_path(lake_path)


def freshness(spark: SparkSession, lake_path: str) -> list[tuple[str, str, float]]:
    """``dbt source freshness``: (source, pass|warn|error, seconds since its newest record) for
    the sources that declare a ``loaded_at_field`` (the validated telemetry)."""
    result = _dbt(spark, lake_path, ["source", "freshness"])
    return [(r.node.name, str(r.status), float(r.age)) for r in (result.result or [])
            if getattr(r, "age", None) is not None]


def built_from_path(lake_path: str) -> Path:
    """What the last whole build read (``_built_from``), beside dbt's own files."""
    return Path(lake_path) / "_dbt" / "built_from.json"


def _built_from(spark: SparkSession, lake_path: str) -> dict[str, Any]:
    """What a whole build's marts are a function of: each source's Delta version and the
    project's text (an upgraded model must build even over an unchanged lake)."""
    text = hashlib.sha256()
    for path in sorted(PROJECT.rglob("*")):
        if path.is_file() and path.suffix in (".sql", ".yml"):
            text.update(str(path.relative_to(PROJECT)).encode() + b"\0" + path.read_bytes())
    return {"sources": {name: lake.version(spark, lake_path, table) for name, table in SOURCES.items()},
            "project": text.hexdigest()}


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """The pipeline's last stage: every model and test, unless nothing they read changed since
    the last whole build (an hourly run of a quiet fleet: a build of nothing cost 73 s)."""
    recorded = built_from_path(config.lake_path)
    before = _built_from(spark, config.lake_path)
    if (recorded.is_file() and json.loads(recorded.read_text()) == before
            and Path(marts_path(config.lake_path)).is_dir()):
        progress("sql: nothing new since the last build; nothing to do")
        return {"nodes": 0}
    counts = build(spark, config.lake_path, progress=progress)
    recorded.parent.mkdir(parents=True, exist_ok=True)
    recorded.write_text(json.dumps(_built_from(spark, config.lake_path)))
    return counts
