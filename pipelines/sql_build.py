"""The SQL stage: build the dbt project in ``dbt_like_sql/`` (staging, intermediate, marts)
and check the marts' rules, in-process, on the pipeline's SparkSession.

dbt-spark's ``session`` method takes the active SparkSession (``getOrCreate``), so the
models run with the pipeline's jars, settings and ``--master``. The session's catalog is
in memory, so each build first registers the lake's tables (the sources, schema
``lens_lake``) and the marts earlier builds wrote (Delta tables under ``<lake>/marts``,
schema ``lens_marts``) as external tables. dbt-spark turns ANSI mode off on the session; the
build puts it back.

What a build costs is what its new data costs (issue 54):

- Scope: the groups with events validated since the last whole build, those whose history in
  the broker's log gold priced further since the last build (a group only the broker shows has no
  events), and the arrival days of new quarantine, found once and registered as the sources ``build.<column>_scope``
  (``register_scope``); each mart recomputes its scope and replaces the scope's rows in one
  Delta write (dbt_like_sql/macros/scoped_incremental.sql), or writes nothing.
- Only the marts that changed: a mart whose scope is empty, or (without a scope) none of whose
  sources changed since the last build, is not run at all (``plan``). A mart that does not exist
  yet, one an upgrade renamed (``pipelines.migrations``) and every one under ``--full-refresh``
  is written whole (the source ``build.whole``).
- The rules where they are cheapest: the marts' not-null, accepted-values and range rules are
  Delta CHECK constraints declared in their YAML and checked on every write
  (macros/mart_constraints.sql); the tests that need a query (uniqueness, relationships) read
  the scope just written (macros/test_scope.sql). The whole suite, with the staging and unit
  tests, is ``check`` (``rebalance-lens sql test``; the daily DAG runs it).
- dbt parses the project once per change of it: what changes from build to build (the scope, the
  marts written whole, gold's mark) is data the models read when they compile (``register_plan``),
  not dbt vars, whose every change makes dbt parse the whole project again.

A mart that gains a column keeps its rows and gets the column (appended by the
materialization: null until its groups are recomputed).
"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lens_runtime.errors import LensError
from pipelines import catalog, lake, migrations
from pipelines.gold import upgrade as gold_upgrade
from pipelines.gold.broker_input import priced_through
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
# Each scope column of the marts (their ``replace_scope``): the lake table and column whose values
# in newly validated rows are the scope (``build.<column>_scope``, macros/incremental_scope.sql).
SCOPES = {"group_id": (catalog.EVENTS, "group_id"), "arrival_date": (catalog.QUARANTINE, "date")}
# The scope column gold's groups are keyed by: a group only the broker shows (no validated rows) joins its
# scope when gold priced more of its history in the log than the last build saw (``broker_priced_path``).
GROUP_SCOPE = "group_id"
# What only the whole suite runs: the staging and intermediate tests re-check the lake's own
# contract over whole tables, the unit tests the models' SQL on fixed rows.
SUITE_ONLY = ("path:models/staging,test_type:data", "path:models/intermediate,test_type:data", "test_type:unit")


def marts_path(lake_path: str) -> str:
    return f"{lake_path.rstrip('/')}/marts"


def docs_path(lake_path: str) -> Path:
    """Where ``dbt docs generate`` writes the site (index.html with the catalog and lineage)."""
    return Path(lake_path) / "_dbt" / "target"


def log_path(lake_path: str) -> Path:
    return Path(lake_path) / "_dbt" / "logs" / "dbt.log"


def built_from_path(lake_path: str) -> Path:
    """What the last whole build read (``_built_from``), beside dbt's own files."""
    return Path(lake_path) / "_dbt" / "built_from.json"


def broker_priced_path(lake_path: str) -> Path:
    """Per group, the broker's last record gold had priced when the last build wrote its marts."""
    return Path(lake_path) / "_dbt" / "broker_priced.json"


def _broker_priced(spark: SparkSession, lake_path: str) -> list[list[Any]]:
    """[cluster_id, group_id, offset] of each group gold priced from the broker's log, sorted (JSON's shape)."""
    return sorted([*group, offset] for group, offset in priced_through(spark, lake_path).items())


def repriced_groups(now: list[list[Any]], recorded: list[list[Any]]) -> list[str]:
    """The group ids whose broker history gold priced further than the last build saw."""
    seen = {tuple(row) for row in recorded}
    return sorted({group for cluster, group, offset in now if (cluster, group, offset) not in seen})


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


def _committed(log: Path) -> bool:
    """Whether a Delta log holds a commit (a first write that failed leaves only ``_staged_commits``)."""
    return log.is_dir() and any(f.suffix == ".json" and f.stem.isdigit() for f in log.iterdir())


def existing_marts(lake_path: str) -> list[str]:
    root = Path(marts_path(lake_path))
    return sorted(p.name for p in root.iterdir() if _committed(p / "_delta_log")) if root.is_dir() else []


def _clear_uncommitted(lake_path: str) -> None:
    """Delete the folder of a mart whose first write failed (a broken rule): it holds files no
    commit names, and a later CREATE over it fails (DELTA_CREATE_EXTERNAL_TABLE_WITHOUT_TXN_LOG).
    One build at a time writes a lake (pipelines/lake_lock.py)."""
    root = Path(marts_path(lake_path))
    for folder in root.iterdir() if root.is_dir() else []:
        if (folder / "_delta_log").is_dir() and not _committed(folder / "_delta_log"):
            shutil.rmtree(folder)


def register_marts(spark: SparkSession, lake_path: str) -> None:
    """The marts earlier builds wrote to this lake, as ``lens_marts.<model>``."""
    _reset_schema(spark, MART_SCHEMA)
    _clear_uncommitted(lake_path)
    for name in existing_marts(lake_path):
        spark.catalog.createTable(f"{MART_SCHEMA}.{name}", path=f"{marts_path(lake_path)}/{name}", source="delta")


def register_scope(spark: SparkSession, lake_path: str, after: int | None,
                   repriced: Sequence[str] = ()) -> dict[str, int]:
    """The sources ``build.<column>_scope``: for each scope column the values validated after
    batch ``after`` (None: no scope), and in the group scope the ``repriced`` groups (gold priced more
    of their broker history), with their xxhash64 keys, collected once (a job per scope,
    which the files' statistics on ``validate_batch`` keep to the new data) and registered as
    global temporary views. The models read the keys when they compile (a local table: no Spark
    job) and no value reaches SQL text as text. Returns how many values each scope has."""
    from pyspark.sql import functions as F

    found = {}
    for column, (table, source_column) in SCOPES.items():
        rows = []
        if after is not None and lake.exists(spark, lake_path, table):
            values = lake.read(spark, lake_path, table).where(F.col("validate_batch") > after)
            values = values.select(F.col(source_column).alias("value"))
            if column == GROUP_SCOPE and repriced:
                values = values.unionByName(_inline(spark, [("value", "string")], [(g,) for g in repriced]))
            rows = values.distinct().select("value", F.xxhash64("value").alias("key")).collect()
        kind = table.schema()[source_column].dataType.simpleString()
        _local_view(spark, f"{column}_scope", [("value", kind), ("key", "bigint")], [tuple(r) for r in rows])
        found[column] = len(rows)
    return found


def register_plan(spark: SparkSession, gold_mark: int, whole: Sequence[str], sync_constraints: bool) -> None:
    """The sources ``build.plan`` (gold's mark, the batch the marts' rows reflect; whether to bring
    existing marts' rules to their YAML's) and ``build.whole`` (the marts written whole): what
    changes from build to build is data the models read, not dbt vars, so dbt reuses its parse."""
    _local_view(spark, "plan", [("gold_mark", "bigint"), ("sync_constraints", "boolean")],
                [(gold_mark if gold_mark >= 0 else None, sync_constraints)])
    _local_view(spark, "whole", [("name", "string")], [(name,) for name in whole])


def _local_view(spark: SparkSession, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> None:
    """``global_temp.<name>``: ``rows`` held in the query plan (``_inline``)."""
    _inline(spark, columns, rows).createOrReplaceGlobalTempView(name)


def _inline(spark: SparkSession, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> DataFrame:
    """``rows`` as a table held in the query plan (inline VALUES, each value a parameter of the query,
    never SQL text), which Spark reads without a job: a DataFrame made from Python rows is an RDD,
    and each query of one was a Spark job (155 in one build)."""
    names = ", ".join(f"`{column}`" for column, _ in columns)
    typed = ", ".join(f"cast(`{column}` as {kind}) as `{column}`" for column, kind in columns)
    if rows:
        values = ", ".join("(" + ", ".join(f":p{i}_{j}" for j in range(len(columns))) + ")" for i in range(len(rows)))
        args: dict[str, Any] = {f"p{i}_{j}": value for i, row in enumerate(rows) for j, value in enumerate(row)}
    else:  # VALUES needs a row: one of nulls, filtered out
        values, args = "(" + ", ".join("null" for _ in columns) + ")", {}
    where = "" if rows else " where false"
    return spark.sql(f"select {typed} from values {values} as t({names}){where}", args=args)


@dataclass(frozen=True)
class Mart:
    """A mart model as dbt parsed it: its scope column (None: written whole) and the lake sources it reads."""

    name: str
    scope: str | None
    sources: frozenset[str]


def marts_of(manifest: Any) -> dict[str, Mart]:
    """The project's marts (models under models/marts), from dbt's parse."""
    nodes = {**manifest.nodes, **manifest.sources}

    def sources(unique_id: str) -> set[str]:
        node = nodes[unique_id]
        if unique_id.startswith("source."):
            return {node.name} if node.source_name == "lens" else set()
        return set().union(*(sources(parent) for parent in node.depends_on.nodes))

    return {node.name: Mart(node.name, (node.config.get("replace_scope") or {}).get("column"),
                            frozenset(sources(uid)))
            for uid, node in manifest.nodes.items() if uid.startswith("model.") and node.fqn[1] == "marts"}


@dataclass(frozen=True)
class Plan:
    """What a build writes: the marts it runs, those of them written whole, and the scope sizes."""

    run: tuple[str, ...]
    whole: tuple[str, ...]
    scope: dict[str, int]
    project_changed: bool

    def said(self) -> str:
        scoped = ", ".join(f"{n} {c.replace('_', ' ')}{'s' if n != 1 else ''}" for c, n in self.scope.items() if n)
        return (f"sql: {len(self.run)} mart(s) to build ({len(self.whole)} whole"
                + (f"; new data in {scoped}" if scoped else "") + ")")


def plan(marts: dict[str, Mart], whole: Sequence[str], scope: dict[str, int], changed_sources: set[str],
         project_changed: bool) -> Plan:
    """Which marts a build runs: every one written ``whole`` (missing, renamed by an upgrade, or
    all under --full-refresh), every one after a change of the project (their rules are brought to
    its YAML's), a scoped one whose scope has new data, one without a scope whose sources changed."""
    def runs(mart: Mart) -> bool:
        if mart.name in whole or project_changed:
            return True
        return scope.get(mart.scope, 0) > 0 if mart.scope else bool(mart.sources & changed_sources)

    return Plan(tuple(sorted(m.name for m in marts.values() if runs(m))), tuple(sorted(whole)), scope,
                project_changed)


def _common(lake_path: str) -> list[str]:
    """dbt's arguments for this lake; its only var is the lake's path, so dbt reuses its parse of the
    project (``<lake>/_dbt/target``) from one build to the next."""
    return ["--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT), "--target-path", str(docs_path(lake_path)),
            "--log-path", str(log_path(lake_path).parent), "--vars", json.dumps({"lake": lake_path.rstrip("/")}),
            "--quiet"]


# Session settings while dbt runs, put back after. dbt-spark turns ANSI mode off by itself.
# Adaptive execution off: it runs each query stage as a Spark job of its own (a mart's small
# query took 2-5 jobs with it, 1-3 without), and on tables this size it has nothing to adapt;
# the 4 shuffle partitions the session has are the marts' size.
DBT_SETTINGS = {"spark.sql.adaptive.enabled": "false"}


@contextmanager
def _session(spark: SparkSession, lake_path: str) -> Iterator[None]:
    """The lake's sources and marts registered in the session's catalog, ``DBT_SETTINGS`` on; the
    session's settings as they were after."""
    if not lake.exists(spark, lake_path, catalog.STAGE_PROGRESS):
        raise LensError(f"no pipeline output in {lake_path}: run `rebalance-lens pipeline run` first")
    register_sources(spark, lake_path)
    register_marts(spark, lake_path)
    kept = {key: spark.conf.get(key, None) for key in ("spark.sql.ansi.enabled", *DBT_SETTINGS)}
    for key, value in DBT_SETTINGS.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in kept.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _invoke(args: list[str], manifest: Any = None) -> Any:
    """One dbt command in this process (``manifest``: dbt's parse to reuse); its result."""
    from dbt.cli.main import dbtRunner

    result = dbtRunner(manifest=manifest).invoke(args)
    if result.exception is not None:
        raise LensError(f"dbt {args[0]} could not run: {result.exception}") from result.exception
    return result


def _counts(result: Any) -> tuple[dict[str, int], list[str]]:
    """What a build or test run ran, passed and failed; each failure with the first line that names its rule."""
    runs = list(result.result or [])
    statuses = [str(r.status) for r in runs]
    failed = [f"{r.node.name}: {_first_rule_line(r.message)}" for r in runs if str(r.status) in ("error", "fail")]
    counts = {"nodes": len(statuses), "failed": len(failed),
              "passed": sum(s in ("success", "pass") for s in statuses), "warned": statuses.count("warn")}
    return counts, failed


def _first_rule_line(message: str | None) -> str:
    """A Delta constraint's violation (``CHECK constraint accepted_values_cause ... violated``), else the first line."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    # a scoped write's violation comes wrapped in the replace-where mismatch: the rule is the line after it
    named = [line for line in lines if "CHECK constraint" in line] or [line for line in lines
                                                                        if "constraint" in line.lower()]
    return (named or lines or ["failed"])[0][:300]


def _raise_failed(what: str, failed: list[str], lake_path: str) -> None:
    if failed:
        raise LensError(f"{what}: {len(failed)} failed ({'; '.join(failed[:5])}): see {log_path(lake_path)}")


def build(spark: SparkSession, lake_path: str, select: Sequence[str] = (), progress: Progress = print,
          full_refresh: bool = False) -> dict[str, int]:
    """``dbt build`` of the marts that changed (``plan``; ``select``: dbt selectors instead) and
    of the tests that need a query, on what they wrote; counts of what ran, passed and failed.
    Raises ``LensError`` naming what failed (a broken rule by its name). The caller holds the
    lake's lock (a lake under older column names is migrated first)."""
    if lake.exists(spark, lake_path, catalog.STAGE_PROGRESS):
        migrations.migrate(spark, lake_path, progress)
        gold_upgrade.upgrade(spark, lake_path, progress)
    stale = migrations.stale_marts(spark, lake_path, progress)
    gold_mark, sql_mark = lake.stage_mark(spark, lake_path, "gold"), lake.stage_mark(spark, lake_path, SQL_STAGE)
    priced = _broker_priced(spark, lake_path)
    with _session(spark, lake_path):
        manifest = _invoke(["parse", *_common(lake_path)]).result  # what the marts are and read
        todo = _plan_build(spark, lake_path, marts_of(manifest), stale, full_refresh, (sql_mark, gold_mark),
                           bool(select), priced)
        if select:  # the selected models read the staging and intermediate views: (re)create them first
            _invoke(["run", "--select", "config.materialized:view", *_common(lake_path)], manifest)
        elif todo.run:
            progress(todo.said())
        counts, failed = {"nodes": 0}, []
        if select or todo.run:
            selection = list(select) or [*todo.run, "config.materialized:view"]
            counts, failed = _counts(_invoke(["build", "--select", *selection, "--exclude", *SUITE_ONLY,
                                              *(["--full-refresh"] if full_refresh else []), *_common(lake_path)],
                                             manifest))
    if select and not counts["nodes"]:
        raise LensError(f"--select {' '.join(select)} matches no model or test: name models as in "
                        f"{PROJECT / 'models'} (e.g. group_hourly_costs, marts, +open_recommendations)")
    progress(f"sql: dbt build {describe(counts)}" if counts["nodes"] else "sql: no mart has new data to build")
    _raise_failed("dbt build", failed, lake_path)
    if not select and sql_mark != gold_mark:
        lake.set_stage_mark(spark, lake_path, SQL_STAGE, gold_mark)
    if not select:
        broker_priced_path(lake_path).parent.mkdir(parents=True, exist_ok=True)
        broker_priced_path(lake_path).write_text(json.dumps(priced))
    return counts


def _plan_build(spark: SparkSession, lake_path: str, marts: dict[str, Mart], stale: Sequence[str],
                full_refresh: bool, marks: tuple[int, int], selected: bool, priced: list[list[Any]]) -> Plan:
    """The build's plan, registered for dbt (``register_scope``, ``register_plan``)."""
    sql_mark, gold_mark = marks
    recorded, now = _recorded(lake_path), _built_from(spark, lake_path)
    existing = existing_marts(lake_path)
    whole = [m for m in marts if full_refresh or m not in existing or m in stale]
    project_changed = recorded.get("project") != now["project"]
    register_plan(spark, gold_mark, whole, sync_constraints=project_changed)
    # a build that writes every mart whole reads no scope; otherwise what was validated after the last whole build
    after = None if len(whole) == len(marts) and not selected else (-1 if full_refresh else sql_mark)
    path = broker_priced_path(lake_path)
    repriced = repriced_groups(priced, json.loads(path.read_text()) if path.is_file() else [])
    scope = register_scope(spark, lake_path, after, repriced)
    changed = {name for name, v in now["sources"].items() if recorded.get("sources", {}).get(name) != v}
    return plan(marts, whole, scope, changed, project_changed)


def check(spark: SparkSession, lake_path: str, progress: Progress = print) -> dict[str, int]:
    """The whole suite over every row: each mart's query tests unscoped, the staging and
    intermediate tests (the lake's contract) and the unit tests (the models' SQL); the rules
    Delta enforces held for every row when it was written. Raises ``LensError`` naming what failed."""
    with _session(spark, lake_path):
        register_scope(spark, lake_path, None)
        register_plan(spark, lake.stage_mark(spark, lake_path, "gold"), existing_marts(lake_path), False)
        args = ["build", "--select", "config.materialized:view", "resource_type:test", "resource_type:unit_test",
                *_common(lake_path)]
        counts, failed = _counts(_invoke(args))
    progress(f"sql: the whole suite {describe(counts)}")
    _raise_failed("the SQL suite", failed, lake_path)
    return counts


def docs(spark: SparkSession, lake_path: str) -> Path:
    """``dbt docs generate``: the documentation site (models, columns, tests, lineage); its folder."""
    with _session(spark, lake_path):
        register_scope(spark, lake_path, None)
        register_plan(spark, lake.stage_mark(spark, lake_path, "gold"), (), False)
        args = ["docs", "generate", *_common(lake_path)]
        if not _invoke(args).success:
            raise LensError(f"dbt docs generate failed: see {log_path(lake_path)}")
    return docs_path(lake_path)


def freshness(spark: SparkSession, lake_path: str) -> list[tuple[str, str, float]]:
    """``dbt source freshness``: (source, pass|warn|error, seconds since its newest record) for
    the sources that declare a ``loaded_at_field`` (the validated telemetry)."""
    with _session(spark, lake_path):
        args = ["source", "freshness", *_common(lake_path)]
        result = _invoke(args)
    return [(r.node.name, str(r.status), float(r.age)) for r in (result.result or [])
            if getattr(r, "age", None) is not None]


def _built_from(spark: SparkSession, lake_path: str) -> dict[str, Any]:
    """What a whole build's marts are a function of: each source's Delta version and the
    project's text (an upgraded model must build even over an unchanged lake)."""
    text = hashlib.sha256()
    for path in sorted(PROJECT.rglob("*")):
        if path.is_file() and path.suffix in (".sql", ".yml") and "target" not in path.relative_to(PROJECT).parts:
            text.update(str(path.relative_to(PROJECT)).encode() + b"\0" + path.read_bytes())
    return {"sources": {name: lake.version(spark, lake_path, table) for name, table in SOURCES.items()},
            "project": text.hexdigest()}


def _recorded(lake_path: str) -> dict[str, Any]:
    recorded = built_from_path(lake_path)
    return json.loads(recorded.read_text()) if recorded.is_file() else {}


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """The pipeline's last stage: the marts with new data and their tests, unless nothing they
    read changed since the last whole build (an hourly run of a quiet fleet: a build of nothing
    cost 73 s)."""
    if _recorded(config.lake_path) == _built_from(spark, config.lake_path) and existing_marts(config.lake_path):
        progress("sql: nothing new since the last build; nothing to do")
        return {"nodes": 0}
    counts = build(spark, config.lake_path, progress=progress)
    built_from_path(config.lake_path).parent.mkdir(parents=True, exist_ok=True)
    built_from_path(config.lake_path).write_text(json.dumps(_built_from(spark, config.lake_path)))
    return counts
