"""Gold tables an older gold wrote, brought up to today's columns in place, by gold's own arithmetic
(where ``pipelines.migrations`` renames, this recomputes: it stands on the gold stage's modules).

A gold/handoffs written before the estimates (``catalog.ESTIMATES``: ``duplicates_estimate`` and the
rest) gets them in one rewrite (``with_estimates``): a crash handoff's recomputed from the stored
ownership intervals as gold draws them now (what the estimate reads of them was stored before it;
the fold's newer columns read null, and the estimate does without them), any other's from its own
figures. Idempotent: a table with the columns is left alone. The runner and the SQL build call
``upgrade`` under the lake's lock, after the migrations.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import Progress
from pipelines.gold.handoffs import bounded_estimates, handoffs_of
from pipelines.migrations import stored_columns

ESTIMATES = catalog.ESTIMATES
ESTIMATES_SAID = (f"{catalog.HANDOFFS.path}: added {', '.join(ESTIMATES)} (a crash's recomputed from "
                  f"{catalog.OWNERSHIP.path}, any other's from its own figures)")


def _estimate_struct(separator: str = ": ") -> str:
    kinds = dict(catalog.HANDOFFS.all_columns())
    return ", ".join(f"{name}{separator}{kinds[name]}" for name in ESTIMATES)


def _crash_estimates(intervals: list[Any]) -> list[tuple[Any, ...]]:
    """One partition's stored ownership intervals: its crash handoffs' ids and estimates, as gold draws them."""
    return [(h["handoff_id"], *[h[c] for c in ESTIMATES]) for h in handoffs_of([i.asDict() for i in intervals])
            if h["release_kind"] == "crash"]


def _figures_estimates(row: Any) -> tuple[Any, ...]:
    return tuple(bounded_estimates(row.asDict()).values())


def with_estimates(spark: SparkSession, lake_path: str, rows: DataFrame) -> DataFrame:
    """``rows`` (gold/handoffs under the current names) with their estimates (module docstring)."""
    crash_type = f"array<struct<handoff_id: string, {_estimate_struct()}>>"
    crash = F.udf(_crash_estimates, crash_type)
    if lake.exists(spark, lake_path, catalog.OWNERSHIP):
        intervals = lake.declared(lake.read(spark, lake_path, catalog.OWNERSHIP), catalog.OWNERSHIP)
        recomputed = (intervals.groupBy(*catalog.GROUP_KEY, "topic", "partition")
                      .agg(F.collect_list(F.struct(*catalog.OWNERSHIP.column_names())).alias("rows"))
                      .select(F.explode(crash("rows")).alias("e")).select("e.*"))
    else:
        recomputed = spark.createDataFrame([], f"handoff_id string, {_estimate_struct(' ')}")
    recomputed = recomputed.select("handoff_id", *[F.col(c).alias(f"_crash_{c}") for c in ESTIMATES])
    figures = F.udf(_figures_estimates, f"struct<{_estimate_struct()}>")(
        F.struct("release_kind", "duplicates", "duplicates_upper", "pause_s", "pause_upper_s"))
    joined = rows.drop(*ESTIMATES).join(recomputed, "handoff_id", "left").withColumn("_figures", figures)
    crash_row = F.col("release_kind") == "crash"
    estimated = joined.select(*[c for c in joined.columns if not c.startswith("_")],
                              *[F.when(crash_row, F.col(f"_crash_{c}")).otherwise(F.col(f"_figures.{c}")).alias(c)
                                for c in ESTIMATES])
    names = catalog.HANDOFFS.column_names()
    return estimated.select(*names, *[c for c in estimated.columns if c not in names])


def _lacks_estimates(spark: SparkSession, lake_path: str) -> bool:
    columns = stored_columns(spark, catalog.HANDOFFS.location(lake_path))
    return columns is not None and ESTIMATES[0] not in columns


def upgrade(spark: SparkSession, lake_path: str, progress: Progress = print) -> list[str]:
    """Add the estimates to a gold/handoffs stored without them; the lines printed (one, or none)."""
    if not _lacks_estimates(spark, lake_path):
        return []
    rows = lake.read(spark, lake_path, catalog.HANDOFFS)
    lake.rewrite(spark, lake_path, catalog.HANDOFFS, with_estimates(spark, lake_path, rows))
    progress(ESTIMATES_SAID)
    return [ESTIMATES_SAID]
