"""The broker's history as the gold stage reads it (``silver/broker_*``, with the broker source on):
which groups have history gold has not priced yet, and their rows as columns of the group pass's input.

A group's history went on when the broker stage read a record of it that gold has not priced: the
stage keeps each group's last record read (``through_offset`` in ``silver/broker_state``), gold the
one it last priced (``broker_through_offset`` in its group row of ``gold/fold_state``, written with its
outputs). Such a group is in gold's scope as a group with new events is, whether or not an agent
runs on its members. Both reads are one row per group; a group in scope has its whole broker history
read and priced again, as its handoffs are (a few rows per ownership change: the commits the stage
keeps are bounded whatever the commit rate). A group is ``(cluster_id, group_id)`` on both sides: the
broker stage's cluster id is the one the agents' DescribeCluster gives.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import PipelineConfig
from pipelines.gold.broker_gold import END_COLUMN, HISTORY_COLUMNS
from pipelines.gold.broker_handoffs import LOG_END_FIELDS
from pipelines.scope import Group

GROUP = list(catalog.GROUP_KEY)
# The broker tables a group's history is read from, by the group pass's column (the log ends are
# read by the partitions its ownership changes name).
HISTORY_TABLES: dict[str, catalog.Table] = {
    HISTORY_COLUMNS["changes"]: catalog.BROKER_OWNERSHIP, HISTORY_COLUMNS["commits"]: catalog.BROKER_COMMITS,
    HISTORY_COLUMNS["generations"]: catalog.BROKER_GENERATIONS, HISTORY_COLUMNS["events"]: catalog.BROKER_EVENTS}
PRICED_THROUGH = "broker_through_offset"  # gold/fold_state's column: the broker's last record gold priced


@dataclass(frozen=True)
class BrokerMark:
    """A group's last record the broker stage read: its offset in ``__consumer_offsets`` and its time."""

    through_offset: int
    through_ms: int


def broker_marks(spark: SparkSession, config: PipelineConfig) -> dict[Group, BrokerMark]:
    """Every group the broker's log shows, with its last record read; none when the broker source is
    off or has not run."""
    lake_path, table = config.lake_path, catalog.BROKER_STATE
    if config.broker_source != "on" or not lake.exists(spark, lake_path, table):
        return {}
    rows = (lake.declared(lake.read(spark, lake_path, table), table).where(F.col("group_id").isNotNull())
            .select(*GROUP, "through_offset", "through_ms").collect())
    return {(r.cluster_id, r.group_id): BrokerMark(r.through_offset, r.through_ms) for r in rows}


def priced_through(spark: SparkSession, lake_path: str) -> dict[Group, int]:
    """Per group, the broker's last record gold has priced (none before the broker stage has run)."""
    table = catalog.FOLD_STATE
    if not lake.exists(spark, lake_path, table) or not lake.exists(spark, lake_path, catalog.BROKER_STATE):
        return {}
    rows = (lake.declared(lake.read(spark, lake_path, table), table)
            .where(F.col("topic").isNull() & F.col(PRICED_THROUGH).isNotNull())
            .select(*GROUP, PRICED_THROUGH).collect())
    return {(r.cluster_id, r.group_id): r[PRICED_THROUGH] for r in rows}


def with_new_history(marks: dict[Group, BrokerMark], priced: dict[Group, int]) -> list[Group]:
    """The groups the broker stage read a record of that gold has not priced."""
    return sorted(g for g, m in marks.items() if m.through_offset is not None and priced.get(g, -1) < m.through_offset)


def broker_rows(spark: SparkSession, config: PipelineConfig, groups: list[Group],
                marks: dict[Group, BrokerMark]) -> DataFrame | None:
    """The broker history of the ``groups`` it shows, one struct column per kind of row
    (``HISTORY_COLUMNS``: the tables', and the log ends of the partitions their ownership changes
    name) and their last record's time (``END_COLUMN``), keyed by group; None when it shows none."""
    known = [g for g in groups if g in marks]
    if not known:
        return None
    lake_path = config.lake_path
    parts = [spark.createDataFrame([(*g, marks[g].through_ms) for g in known],
                                   f"cluster_id string, group_id string, {END_COLUMN} bigint")]
    for column, table in HISTORY_TABLES.items():
        if lake.exists(spark, lake_path, table):
            parts.append(lake.rows_of(spark, lake_path, table, GROUP, known)
                         .select(*GROUP, F.struct(*table.column_names()).alias(column)))
    ends = catalog.BROKER_LOG_ENDS
    if lake.exists(spark, lake_path, catalog.BROKER_OWNERSHIP) and lake.exists(spark, lake_path, ends):
        named = (lake.rows_of(spark, lake_path, catalog.BROKER_OWNERSHIP, GROUP, known)
                 .where(F.col("topic").isNotNull()).select(*GROUP, "topic", "partition").distinct())
        clusters = sorted({c for c, _ in known})
        log_ends = lake.read(spark, lake_path, ends).where(F.col("cluster_id").isin(clusters))
        parts.append(named.join(log_ends, ["cluster_id", "topic", "partition"])
                     .select(*GROUP, F.struct(*LOG_END_FIELDS).alias(HISTORY_COLUMNS["log_ends"])))
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
