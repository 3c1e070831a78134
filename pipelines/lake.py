"""Reading and writing the lake's tables (declared in ``pipelines.catalog``): the one way the
stages write, and the progress marks that make them incremental.

A run replaces what it recomputed (a scope of groups, a
validation batch, a stage's mark) in one commit per table (``replace_where``), so a
run killed at any point leaves each table as it was or as it should be, and its rerun
redoes the scope; a run with no new data recomputes and writes nothing.

Tables can grow: a nullable column added to a table's declaration reaches an existing lake
on the next write (Delta's schema merge), and stored rows are read through the declaration
(``declared``: a column the stored table lacks reads as null). Renamed columns are
``pipelines.migrations``' business (``rewrite``).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import reduce
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import Column, DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import functions as F

from lens_runtime.errors import LensError
from pipelines.catalog import STAGE_PROGRESS, VALIDATION_SUMMARY, Table

# Tables a stage writes at the same point land side by side. A small write is mostly the driver
# waiting on Delta's log and Spark's scheduler, not cores: 8 tables' replace_scope of a few rows
# took 20.4-23.0 s one after another and 10.8-11.8 s on 4 threads (2 cores, shared).
LANDING_THREADS = 4
T = TypeVar("T")


def land_together(landings: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``landings`` (each writes tables no other one writes) side by side; their results in order.
    Every one is waited for before the first failure is raised, so a stage that fails leaves no write
    running; what must follow them (a state, a stage's mark) is written after this returns."""
    if len(landings) <= 1:
        return [land() for land in landings]
    with ThreadPoolExecutor(min(LANDING_THREADS, len(landings)), thread_name_prefix="lake-landing") as pool:
        futures = [pool.submit(land) for land in landings]
    return [future.result() for future in futures]


def exists(spark: SparkSession, lake_path: str, table: Table) -> bool:
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, table.location(lake_path))


def missing_locally(lake_path: str, table: Table) -> bool:
    """The lake is a local folder without ``table``: known without starting Spark (a remote
    lake, ``s3://`` and the like, is left to ``exists``)."""
    if "://" in lake_path:
        return False
    return not (Path(table.location(lake_path)) / "_delta_log").is_dir()


def read(spark: SparkSession, lake_path: str, table: Table) -> DataFrame:
    return spark.read.format("delta").load(table.location(lake_path))


def declared(rows: DataFrame, table: Table) -> DataFrame:
    """``rows`` (a stored table's) as the table's declaration has them: its columns in order,
    one the stored table lacks (a lake written before the column joined the catalog, and not
    written since) as null of its declared type."""
    stored = set(rows.columns)
    return rows.select(*[F.col(f"`{name}`") if name in stored else F.lit(None).cast(kind).alias(name)
                         for name, kind in table.all_columns()])


LISTED_VALUES_MAX = 500
# A literal list is text in the query plan, which Spark renders several times per query (its
# explain string for the SQL tab): 30 hostile group ids of 50k-200k characters each listed
# ran the driver's 1 GiB heap out. Past this many characters the values go as rows.
LISTED_CHARS_MAX = 100_000


def rows_of(spark: SparkSession, lake_path: str, table: Table, columns: Sequence[str],
            values: Sequence[tuple]) -> DataFrame:
    """The table's rows whose ``columns`` hold one of ``values`` (tuples, a value per column:
    groups, ``catalog.GROUP_KEY``).

    Up to LISTED_VALUES_MAX values, through a literal list per column (and the tuples, for the
    exact match): Delta skips every file whose min/max of a column excludes them (tables are
    sorted by their scope, see ``_layout``), so a small scope reads a few files. Beyond that, Delta's skipping
    tests each file against every listed value, which costs more than it saves (11,364
    values over 40 files: 9.2 s a query, every query that reads the scope); the rows
    are then kept by the values' range (skipping by min/max) and a broadcast semi-join
    (0.6 s). Values whose text is longer than LISTED_CHARS_MAX in all go that way too."""
    values = sorted(set(map(tuple, values)))
    columns = list(columns)
    rows = read(spark, lake_path, table)
    of_column = [sorted({t[i] for t in values}) for i in range(len(columns))]
    if len(values) <= LISTED_VALUES_MAX and sum(len(str(v)) for t in values for v in t) <= LISTED_CHARS_MAX:
        listed = reduce(lambda a, b: a & b, [F.col(c).isin(v) for c, v in zip(columns, of_column)])
        exact = F.struct(*columns).isin([F.struct(*[F.lit(v).alias(c) for c, v in zip(columns, t)]) for t in values])
        return rows.where(listed & exact if len(columns) > 1 else listed)
    keys = spark.createDataFrame(values, rows.select(*columns).schema)
    within = reduce(lambda a, b: a & b, [F.col(c).between(v[0], v[-1]) for c, v in zip(columns, of_column)])
    return rows.where(within).join(F.broadcast(keys), columns, "left_semi")


@contextmanager
def spilled(spark: SparkSession, rows: DataFrame, path: str) -> Iterator[DataFrame]:
    """``rows`` computed once and written to Parquet at ``path`` (replacing what a crashed
    run left), read back for the block and deleted after it: for a result read several
    times that is too big to cache.

    Why not ``persist()``: Spark caches rows in columnar batches of 10k rows built on the
    heap, and in local mode the executors share the driver's heap (1 GiB by default);
    gold's rows ran the 10M-event benchmark out of it. Parquet streams them to disk."""
    rows.write.mode("overwrite").parquet(path)
    try:
        yield spark.read.parquet(path)
    finally:
        jvm = spark.sparkContext._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(hadoop_path, True)


def version(spark: SparkSession, lake_path: str, table: Table) -> int:
    """The table's latest Delta version, -1 when it does not exist yet: the highest commit file
    in its ``_delta_log`` (a listing through Hadoop's file system, no Spark job: the log keeps
    the latest commit's file whatever it cleans up)."""
    fs, log = _log(spark, lake_path, table)
    if not fs.exists(log):
        return -1
    names = [status.getPath().getName() for status in fs.listStatus(log)]
    return max((int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()), default=-1)


def _log(spark: SparkSession, lake_path: str, table: Table) -> tuple[Any, Any]:
    """The Hadoop file system of the table's ``_delta_log`` folder, and the folder."""
    log = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(f"{table.location(lake_path)}/_delta_log")
    return log.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), log


def newest_commit(spark: SparkSession, lake_path: str, table: Table) -> tuple[int, dict[str, Any]]:
    """The table's latest version and that commit's ``commitInfo`` (``{}`` when it has none;
    version -1: no table), read from its log file: no Spark job, where ``DeltaTable.history``
    runs one."""
    at = version(spark, lake_path, table)
    if at < 0:
        return at, {}
    fs, log = _log(spark, lake_path, table)
    jvm = spark.sparkContext._jvm
    stream = fs.open(jvm.org.apache.hadoop.fs.Path(log, f"{at:020d}.json"))
    try:
        text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()
    actions = (json.loads(line) for line in text.splitlines() if line.strip())
    return at, next((a["commitInfo"] for a in actions if "commitInfo" in a), {})


ROWS_PER_FILE = 250_000  # a file covers a narrow slice of the sort column, so scoped reads skip most files


def _layout(rows: DataFrame, table: Table) -> DataFrameWriter:
    """The writer of every table's data files: rows sorted by the table's ``sort_by`` within
    each task and cut every ROWS_PER_FILE rows, so each file's min/max of the sort column
    is a narrow range. The partition columns lead the sort: Spark's file writer needs its
    rows ordered by them and otherwise sorts the task's rows a second time (validate's
    events write, 2.5M events: 45.5-51.9 s -> 42.4-48.1 s)."""
    return (rows.sortWithinPartitions(*table.partition_by, *table.sort_by).write.format("delta").mode("append")
            .partitionBy(*table.partition_by).option("maxRecordsPerFile", ROWS_PER_FILE))


def _create(rows: DataFrame, lake_path: str, table: Table, metadata: str | None = None) -> None:
    """Write a new table in ``_layout``; Delta keeps statistics only for the table's
    ``stats_columns`` (the ones reads and writes prune by: collecting them for every nested
    body field costs a third of the write), and deletion vectors are on, so a replace or
    DELETE that removes a few rows marks them instead of rewriting their files."""
    writer = (_layout(rows, table)
              .option("delta.dataSkippingStatsColumns", ",".join(table.stats_columns))
              .option("delta.enableDeletionVectors", "true"))
    (writer.option("userMetadata", metadata) if metadata else writer).save(table.location(lake_path))


def append(spark: SparkSession, lake_path: str, table: Table, rows: DataFrame) -> None:
    """Append ``rows`` (the caller knows none is there yet); creates the table (see ``_create``)."""
    if not exists(spark, lake_path, table):
        _create(rows, lake_path, table)
        return
    _layout(rows, table).option("mergeSchema", "true").save(table.location(lake_path))


def delete_rows(spark: SparkSession, lake_path: str, table: Table, condition: Column) -> None:
    """Delete the rows matching ``condition``; when no file's statistics allow one, a
    look at the statistics and no commit."""
    from delta.tables import DeltaTable

    if exists(spark, lake_path, table) and not read(spark, lake_path, table).where(condition).limit(1).isEmpty():
        DeltaTable.forPath(spark, table.location(lake_path)).delete(condition)


def same_keys(keys: Sequence[str], left: str, right: str) -> Column:
    """Null-safe equality of the key columns of two aliased sides."""
    return reduce(lambda a, b: a & b, [F.col(f"{left}.`{k}`").eqNullSafe(F.col(f"{right}.`{k}`")) for k in keys])


def insert_new(spark: SparkSession, lake_path: str, table: Table, rows: DataFrame,
               update: dict[str, str] | None = None) -> None:
    """Insert the rows whose key is not in the table yet (idempotent append); with ``update``
    (column -> SQL over the stored row ``t`` and the new one ``s``), set those columns of the
    rows whose key is there (``rows`` holds one row per key). Creates the table (see
    ``_create``) when it does not exist yet."""
    from delta.tables import DeltaTable

    if not exists(spark, lake_path, table):
        _create(rows, lake_path, table)
        return
    merge = (DeltaTable.forPath(spark, table.location(lake_path)).alias("t")
             .merge(rows.alias("s"), same_keys(table.keys, "t", "s")))
    if update:
        merge = merge.whenMatchedUpdate(set=update)
    merge.whenNotMatchedInsertAll().withSchemaEvolution().execute()  # a column added to the declaration joins


def sql_literal(value: Any) -> str:
    """``value`` as a Spark SQL literal (for the string predicates Delta's writer takes):
    strings quoted with backslash escapes, as Spark's parser reads them by default.

    Why a literal and not a parameter: Delta's ``replaceWhere`` (the one-commit replace every
    incremental write uses) takes its predicate as SQL text only. Text from telemetry (group
    ids) can still not change the predicate's structure: Spark's lexer ends a string literal
    only at an unescaped quote, and every quote and backslash of the value is escaped, so the
    value is one literal whatever it holds (quotes, backslashes, ``\u0027``, newlines, NUL,
    SQL). Two session settings would change the text before the lexer reads it, and
    ``build_spark`` pins both (``replace_where`` refuses a session without them):
    ``spark.sql.parser.escapedStringLiterals=false``, the reading this escaping is for, and
    ``spark.sql.variable.substitute=false`` (on by default, it replaces ``${name}`` anywhere
    in the text, inside quotes too: a group named ``a${x}`` became ``a``). Tested on
    arbitrary text (tests/hardening/test_sql_literal.py) and with hostile group ids end to end."""
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"no SQL literal for {value!r}")
    return str(value)


# The settings under which sql_literal's text reads back as the value (see sql_literal).
LITERAL_SETTINGS = {"spark.sql.parser.escapedStringLiterals": "false", "spark.sql.variable.substitute": "false"}


def _check_literal_settings(spark: SparkSession) -> None:
    wrong = {k: spark.conf.get(k, None) for k, v in LITERAL_SETTINGS.items() if spark.conf.get(k, None) != v}
    if wrong:
        raise LensError(f"this Spark session has {wrong}: the lake's predicates need {LITERAL_SETTINGS} "
                        "(lens_runtime.spark_session.build_spark sets them); set them on the session")


def replace_where(spark: SparkSession, lake_path: str, table: Table, rows: DataFrame, predicate: str,
                  metadata: str | None = None) -> None:
    """Make the table's rows matching ``predicate`` (SQL) equal to ``rows``, in one commit.

    Delta's ``replaceWhere``: the rows the predicate matches are deleted (deletion
    vectors: files whose statistics exclude the predicate are not read, and a file
    holding a few matching rows gets marks, not a rewrite) and ``rows`` appended, in
    one transaction, so a reader sees the old rows or the new ones, never neither, and
    a run killed before the commit left nothing. Delta also checks that every row
    written matches the predicate. Creates the table (see ``_create``) when it does not
    exist yet. ``metadata``: the commit's userMetadata (a stage's mark, read back without a Spark
    job: ``newest_commit``). Columns of ``rows`` the table lacks are added to it (Delta's mergeSchema: a
    lake written before a column joined the catalog gets it, the rows written before read
    null in it; a changed type still fails).
    """
    if not exists(spark, lake_path, table):
        _create(rows, lake_path, table, metadata)
        return
    _check_literal_settings(spark)
    writer = _layout(rows, table).mode("overwrite").option("replaceWhere", predicate).option("mergeSchema", "true")
    (writer.option("userMetadata", metadata) if metadata else writer).save(table.location(lake_path))


def rewrite(spark: SparkSession, lake_path: str, table: Table, rows: DataFrame) -> None:
    """Replace the whole table with ``rows``, whose columns may differ from the stored ones
    (Delta's overwriteSchema), in one commit and the table's layout (``_layout``; its
    statistics columns and deletion vectors as ``_create`` sets them). For a migration that
    renames columns (``pipelines.migrations``): ``rows`` may read the table itself, which Delta
    reads at the version the overwrite replaces."""
    (_layout(rows, table).mode("overwrite").option("overwriteSchema", "true")
     .option("delta.dataSkippingStatsColumns", ",".join(table.stats_columns))
     .option("delta.enableDeletionVectors", "true")
     .save(table.location(lake_path)))


def replace_scope(spark: SparkSession, lake_path: str, table: Table, rows: DataFrame,
                  scope_values: Sequence[tuple], since: Mapping[tuple, int] | None = None,
                  time_column: str | None = None) -> None:
    """Make the table's rows whose scope columns (``table.scope``) hold one of ``scope_values``
    (tuples: groups, ``catalog.GROUP_KEY``) equal to ``rows`` (sorted by the scope, then the
    keys), in one commit (``replace_where``). The predicate lists each column's values (which
    Delta skips files by) and the tuples (the exact scope). ``since``: of some of the tuples, only
    the rows whose ``time_column`` is at or after the value (ms; a timestamp column's rows from that
    instant) are replaced, and ``rows`` holds only those of them.

    Rows of the scope that the recomputation no longer produces go (a late event moved
    an episode's start, say). Why not a MERGE that rewrites only the changed rows: it
    first asks whether the table holds the scope, then materializes the source, joins
    it with the target and writes the changes, 3-4 s of jobs per table on an
    incremental run whatever its size, where this is one delete by file statistics
    and one append (1M-event lake, 11 of 1,136 groups going on, warm, runs of the two
    versions alternated: silver 15.9-17.1 -> 10.8-11.3 s, gold 20.1-21.4 -> 12.5-13.7 s).
    A recomputation with the same result thus commits a version with the same rows; a
    run with no new events recomputes and writes nothing.
    """
    if not scope_values:
        return
    values = sorted(set(map(tuple, scope_values)))
    listed = [f"`{c}` IN ({', '.join(sql_literal(v) for v in sorted({t[i] for t in values}))})"
              for i, c in enumerate(table.scope)]
    in_scope = set(values)
    since = {t: v for t, v in (since or {}).items() if t in in_scope}
    whole = [t for t in values if t not in since]
    columns = f"({', '.join(f'`{c}`' for c in table.scope)})"
    exact = [f"{columns} IN ({', '.join(_tuple_literal(t) for t in whole)})"] if whole else []
    instant = "TIMESTAMP_MILLIS({})" if dict(table.all_columns()).get(time_column) == "timestamp" else "{}"
    exact += [f"({columns} = {_tuple_literal(t)} AND `{time_column}` >= {instant.format(sql_literal(v))})"
              for t, v in sorted(since.items())]
    if len(table.scope) > 1 or since:
        listed.append(f"({' OR '.join(exact)})")
    predicate = " AND ".join(listed)
    replace_where(spark, lake_path, table, rows, predicate)


def _tuple_literal(values: tuple) -> str:
    return f"({', '.join(sql_literal(v) for v in values)})"


def validated_through(spark: SparkSession, lake_path: str) -> int:
    """The last validation batch whose events are final: its summary passed (-1: none).

    Validation appends a batch's rows to events before it deletes the ones that failed
    or repeat; rows of a later batch id are in flight (or left by a crashed attempt,
    which the replay deletes), and readers of events stop here."""
    if not exists(spark, lake_path, VALIDATION_SUMMARY):
        return -1
    high = read(spark, lake_path, VALIDATION_SUMMARY).where("passed").agg(F.max("validate_batch")).first()[0]
    return -1 if high is None else int(high)


def stage_mark(spark: SparkSession, lake_path: str, stage: str) -> int:
    """The last validation batch whose events ``stage`` has processed (-1: none)."""
    if not exists(spark, lake_path, STAGE_PROGRESS):
        return -1
    row = read(spark, lake_path, STAGE_PROGRESS).where(F.col("stage") == stage).first()
    return -1 if row is None else int(row["last_batch"])


def set_stage_mark(spark: SparkSession, lake_path: str, stage: str, last_batch: int) -> None:
    """Record progress after the stage's outputs are written (a crash before this replays the stage)."""
    row = spark.createDataFrame([(stage, last_batch)], "stage string, last_batch bigint")
    replace_where(spark, lake_path, STAGE_PROGRESS, row, f"stage = {sql_literal(stage)}")
