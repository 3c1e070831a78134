"""Where the group pass starts reading a group that goes on from its fold state: its window.

A group written from its horizon (``pipelines.gold.horizon``) keeps its stored handoffs and episodes
before it, so its pass needs its handoffs and intervals from there on only, not its history (on a group
whose every round moves every partition, those grow by its partition count every round). The stage
finds the horizon's candidate before the pass, from the group's rebalance events (``starts``: the same
clusters as ``episodes.clusters``, in Spark), and the pass reads from it (``handoffs_from``,
``intervals_from``) what its rows from there on depend on:

- every handoff its next owner was assigned from the window on, and every crash or loss (a member's
  ``crashed`` and its stalls' start read those of its whole life: ``members.members_of``);
- every interval that ended from the start of the window's hour on (the coverage from that hour on:
  ``horizon.coverage_from``), has not ended, or has no next owner (its partition's last: it may have
  gone on to an owner without the agent), and each partition's first (whether it came from one, and
  the group's partitions).

Its rebalance events and its agents' last sight it reads whole (its members are written whole). The
pass checks that the window is the horizon it finds and that no owner without the agent held a
partition before the window's hour (``group_pass.group_gold``), and gives the group back to be read
whole when not; a group with a part of a handoff to or from an owner without the agent
stored, or a history in the broker's log, is read whole from the start.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines import catalog
from pipelines.gold.causes import POLL_EXCEEDED_ERROR
from pipelines.gold.episodes import CLUSTER_KINDS
from pipelines.gold.horizon import coverage_from
from pipelines.scope import GROUP_DDL, Group

GROUP = list(catalog.GROUP_KEY)


def _frame(spark: SparkSession, of: dict[Group, int]) -> DataFrame:
    return spark.createDataFrame([(*g, t) for g, t in sorted(of.items())], f"{GROUP_DDL}, _at bigint")


def starts(spark: SparkSession, events: DataFrame, latest: dict[Group, int], gap_s: float) -> dict[Group, int]:
    """Per group of ``latest``, the latest start of a cluster of its rebalance ``events`` at ``latest`` or
    before, other than its first cluster's (``horizon.candidate``); a group without one is left out."""
    if not latest:
        return {}
    rebalance = events.join(F.broadcast(_frame(spark, latest)), GROUP).where(
        F.col("kind").isin(sorted(CLUSTER_KINDS - {"client_error"}))
        | ((F.col("kind") == "client_error") & (F.get_json_object("body", "$.name") == POLL_EXCEEDED_ERROR)))
    previous = F.lag("event_time_ms").over(Window.partitionBy(*GROUP).orderBy("event_time_ms"))
    begun = (rebalance.select(*GROUP, "_at", "event_time_ms", previous.alias("_previous"))
             .where(F.col("_previous").isNull() | (F.col("event_time_ms") - F.col("_previous") > gap_s * 1000)))
    found = begun.groupBy(*GROUP).agg(
        F.min("event_time_ms").alias("first"),
        F.max(F.when(F.col("event_time_ms") <= F.col("_at"), F.col("event_time_ms"))).alias("start")).collect()
    return {(r.cluster_id, r.group_id): r.start for r in found if r.start is not None and r.start != r.first}


def handoffs_from(spark: SparkSession, handoffs: DataFrame, windows: dict[Group, int]) -> DataFrame:
    """``handoffs``, those of a group in ``windows`` from its window on (the module docstring)."""
    if not windows:
        return handoffs
    return (handoffs.join(F.broadcast(_frame(spark, windows)), GROUP, "left")
            .where(F.col("_at").isNull() | (F.col("assigned_ms") >= F.col("_at"))
                   | F.col("release_kind").isin("crash", "lost"))
            .drop("_at"))


def intervals_from(spark: SparkSession, intervals: DataFrame, windows: dict[Group, int]) -> DataFrame:
    """``intervals``, those of a group in ``windows`` from its window on (the module docstring)."""
    if not windows:
        return intervals
    frame = F.broadcast(_frame(spark, {g: coverage_from(w) for g, w in windows.items()}))
    first = F.min("assigned_ms").over(Window.partitionBy(*GROUP, "topic", "partition"))
    windowed = (intervals.join(frame, GROUP).withColumn("_first", first)
                .where((F.col("assigned_ms") == F.col("_first"))
                       | F.coalesce(F.col("released_ms") >= F.col("_at"), F.lit(True))
                       | F.coalesce(F.col("next_assigned_ms") >= F.col("_at"), F.lit(True))
                       | ~F.coalesce(F.col("release_kind").isin("revoked", "lost"), F.lit(False)))
                .drop("_at", "_first"))
    return intervals.join(frame, GROUP, "left_anti").unionByName(windowed)
