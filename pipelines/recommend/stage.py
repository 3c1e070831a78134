"""The recommend stage: what-if and recommendations for the groups with new validated events
(incremental by group, like gold, which it reads)."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import PipelineConfig, Progress
from pipelines.gold.group_apply import apply_per_group
from pipelines.recommend import window
from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.group_pass import recommend_group
from pipelines.scope import Group, pending

# What the pass reads of each gold table, as SQL expressions (the ownership intervals are the big one).
SOURCES: dict[str, tuple[catalog.Table, list[str] | None]] = {
    "members": (catalog.MEMBERS, None),
    "handoffs": (catalog.HANDOFFS, None),
    "episodes": (catalog.EPISODES, [*catalog.GROUP_KEY, "start_ms", "end_ms", "cause"]),
    "intervals": (catalog.OWNERSHIP, [*catalog.GROUP_KEY, "topic", "partition", "agent_id", "assigned_ms",
                                      "first_fetch_ms", "released_ms", "last_progress_ms", "processed",
                                      "release_kind", "uncommitted_sum", "uncommitted_samples",
                                      "max_progress_interval_ms"]),
    "coverage": (catalog.COVERAGE, [*catalog.GROUP_KEY, "covered_s", "owned_s",
                                    "unix_millis(hour_start) + 3600000 AS hour_end_ms"]),
}
OUTPUTS = (("what_if", catalog.WHAT_IF), ("recommendation", catalog.RECOMMENDATIONS))
ROW_DDL = ", ".join(f"{name} struct<{table.ddl(': ')}>" for name, table in OUTPUTS)


def _window_starts(spark: SparkSession, config: PipelineConfig, groups: list[Group]) -> DataFrame:
    """Per group, its window's start (``window.start_of``): the window's length before its last event."""
    members = lake.rows_of(spark, config.lake_path, catalog.MEMBERS, catalog.GROUP_KEY, groups)
    window_ms = window.length_ms(config.recommend_window_h)
    return members.groupBy(*catalog.GROUP_KEY).agg((F.max("last_seen_ms") - window_ms).alias("_window_start_ms"))


def _inputs(spark: SparkSession, config: PipelineConfig, groups: list[Group]) -> DataFrame:
    """One row per gold row of the groups in their windows (``window.SINCE``, so a Python worker holds
    the window only): the group (``catalog.GROUP_KEY``), ``source`` and the row as a struct in the
    column named by its source (the others null); rows as declared (``lake.declared``)."""
    starts = F.broadcast(_window_starts(spark, config, groups))
    parts = []
    for name, (table, columns) in SOURCES.items():
        rows = lake.declared(lake.rows_of(spark, config.lake_path, table, catalog.GROUP_KEY, groups), table)
        rows = rows.selectExpr(*(columns or rows.columns))
        at = F.coalesce(*(F.col(c) for c in window.SINCE[name]))
        rows = (rows.join(starts, list(catalog.GROUP_KEY))
                .where(at.isNull() | (at >= F.col("_window_start_ms"))).drop("_window_start_ms"))
        parts.append(rows.select(*catalog.GROUP_KEY, F.lit(name).alias("source"), F.struct(*rows.columns).alias(name)))
    combined = parts[0]
    for part in parts[1:]:
        combined = combined.unionByName(part, allowMissingColumns=True)
    return combined


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """What-if and recommendations for the groups with events validated since recommend last ran."""
    todo = pending(spark, config, "recommend", progress)
    if todo is None:
        return {"groups": 0}
    high, groups = todo
    lake_path = config.lake_path
    broker = BrokerGroups(config.kip848_heartbeat_ms, config.kip848_session_timeout_ms)

    def recommend(group: list[dict]) -> list[dict]:
        what_if, recommendations = recommend_group(group, lake_path, broker, config.recommend_window_h)
        return ([{"what_if": row, "recommendation": None} for row in what_if]
                + [{"what_if": None, "recommendation": row} for row in recommendations])

    with lake.spilled(spark, apply_per_group(_inputs(spark, config, groups), catalog.GROUP_KEY, recommend, ROW_DDL),
                      f"{config.checkpoint_path}/recommend_rows") as rows:
        for name, table in OUTPUTS:
            lake.replace_scope(spark, lake_path, table, rows.where(F.col(name).isNotNull()).select(f"{name}.*"),
                               groups)
        counts = rows.agg(*[F.count(name).alias(f"{name}s") for name, _ in OUTPUTS]).first().asDict()
    lake.set_stage_mark(spark, lake_path, "recommend", high)
    return {"groups": len(groups), **counts}
