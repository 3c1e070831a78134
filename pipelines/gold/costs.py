"""Per-group totals of what rebalances cost, read from gold: what the demo prints and the
end-to-end tests compare with the scenarios' ground truth."""
from __future__ import annotations

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.gold.metrics import FIGURES


def costs_by_group(handoffs: DataFrame, episodes: DataFrame, after_forming: bool = False) -> DataFrame:
    """One row per group: handoffs (``broker_handoffs`` of them priced from the broker's log alone, as
    bounds: no agent saw them), duplicates and paused partition-seconds (``pause_s``), each
    with its ``_upper`` bound (``pipelines.measures``), and the episodes other than the group's
    start. ``after_forming``: only the handoffs after the group formed, what a
    record log can show (a KIP-848 group's first member is given every partition and gives most
    back before it reads one: real pauses, but no record shows them)."""
    if after_forming:
        handoffs = handoffs.where(F.col("cause") != "start")
    per_group = handoffs.groupBy(*catalog.GROUP_KEY).agg(
        F.count("*").alias("handoffs"), F.count(F.when(F.col("source") == "broker", 1)).alias("broker_handoffs"),
        *[F.sum(figure).alias(figure) for figure in FIGURES])
    churn = (episodes.where(F.col("cause") != "start").groupBy(*catalog.GROUP_KEY)
             .agg(F.count("*").alias("episodes")))
    return per_group.join(churn, list(catalog.GROUP_KEY), "left")


def read_costs(spark: SparkSession, lake_path: str, after_forming: bool = False) -> dict[tuple[str, str], Row]:
    """``costs_by_group`` over the lake's gold tables, by group (cluster_id, group_id)."""
    costs = costs_by_group(lake.read(spark, lake_path, catalog.HANDOFFS), lake.read(spark, lake_path, catalog.EPISODES),
                           after_forming)
    return {(r.cluster_id, r.group_id): r for r in costs.collect()}
