"""Table names and paths of the lake, and the one way the jobs write to them.

Layout under ``lake_path``: ``bronze/``, ``silver/``, ``gold/``, ``audit/`` (validation
summary, stage progress). Writes are MERGEs scoped to what a run recomputed, and a
row is only rewritten when one of its values changed, so a rerun that recomputes the
same rows leaves every table at the same Delta version.
"""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

BRONZE = "bronze/telemetry_raw"
QUARANTINE = "bronze/quarantine"
VALIDATION_SUMMARY = "audit/validation_summary"
STAGE_PROGRESS = "audit/stage_progress"
EVENTS = "silver/events"
MEMBER_STATES = "silver/member_states"
OWNERSHIP = "silver/partition_ownership"
COMMITS = "silver/commits"
HANDOFFS = "gold/handoffs"
EPISODES = "gold/episodes"
METRICS = "gold/metrics"


def table_path(lake_path: str, table: str) -> str:
    return f"{lake_path.rstrip('/')}/{table}"


def exists(spark: SparkSession, path: str) -> bool:
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, path)


def read(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(path)


def version(spark: SparkSession, path: str) -> int:
    """The table's latest Delta version, -1 when it does not exist yet."""
    from delta.tables import DeltaTable

    if not exists(spark, path):
        return -1
    return DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]


def insert_new(spark: SparkSession, path: str, rows: DataFrame, keys: Sequence[str],
               partition_by: Sequence[str] = ()) -> None:
    """Insert the rows whose key is not in the table yet (idempotent append)."""
    from delta.tables import DeltaTable

    if not exists(spark, path):
        rows.write.format("delta").partitionBy(*partition_by).mode("append").save(path)
        return
    cond = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
    DeltaTable.forPath(spark, path).alias("t").merge(rows.alias("s"), cond).whenNotMatchedInsertAll().execute()


def replace_scope(spark: SparkSession, path: str, rows: DataFrame, keys: Sequence[str],
                  scope_column: str, scope: DataFrame) -> None:
    """Make the table's rows for the keys in ``scope`` equal to ``rows``.

    Changed rows are updated, new ones inserted, rows of the scope that the
    recomputation no longer produces are deleted (a late event moved an episode's
    start, say). Unchanged rows are not touched, so recomputing the same result
    commits nothing that changes data.
    """
    from delta.tables import DeltaTable

    if not exists(spark, path):
        rows.write.format("delta").mode("append").save(path)
        return
    scope_values = [r[0] for r in scope.select(scope_column).distinct().collect()]
    if not scope_values:
        return
    values = [c for c in rows.columns if c not in keys]
    cond = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
    changed = " OR ".join(f"NOT (t.`{c}` <=> s.`{c}`)" for c in values) or "false"
    in_scope = F.col(f"t.`{scope_column}`").isin(scope_values)
    (DeltaTable.forPath(spark, path).alias("t")
     .merge(rows.alias("s"), cond)
     .whenMatchedUpdateAll(condition=changed)
     .whenNotMatchedInsertAll()
     .whenNotMatchedBySourceDelete(condition=in_scope)
     .execute())


def stage_mark(spark: SparkSession, lake_path: str, stage: str) -> int:
    """The last validation batch whose events ``stage`` has processed (-1: none)."""
    path = table_path(lake_path, STAGE_PROGRESS)
    if not exists(spark, path):
        return -1
    row = read(spark, path).where(F.col("stage") == stage).first()
    return -1 if row is None else int(row["last_batch"])


def set_stage_mark(spark: SparkSession, lake_path: str, stage: str, last_batch: int) -> None:
    """Record progress after the stage's outputs are written (a crash before this replays the stage)."""
    path = table_path(lake_path, STAGE_PROGRESS)
    row = spark.createDataFrame([(stage, last_batch)], "stage string, last_batch bigint")
    replace_scope(spark, path, row, keys=["stage"], scope_column="stage", scope=row)
