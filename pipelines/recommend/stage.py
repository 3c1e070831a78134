"""The recommend stage: what-if and recommendations for the groups with new validated events
(incremental by group, like gold, which it reads)."""
from __future__ import annotations

from functools import partial

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, cluster, lake
from pipelines.config import PipelineConfig, Progress
from pipelines.group_apply import apply_per_group
from pipelines.recommend import window
from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.group_pass import PRICED, PRICED_DDL, priced_share, recommend_or_fail
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
    "coverage": (catalog.COVERAGE, [*catalog.GROUP_KEY, "covered_s", "owned_s", "broker_covered_s",
                                    "unix_millis(hour_start) + 3600000 AS hour_end_ms"]),
}
OUTPUTS = (("what_if", catalog.WHAT_IF), ("recommendation", catalog.RECOMMENDATIONS),
           ("failure", catalog.RECOMMEND_FAILURES))
# A group with this many ownership intervals in its window prices its candidates over several tasks,
# up to MAX_SHARES (and the cores Spark has): on a group of 200 members and 5M events, one task took
# 187.8 s and 2 shares 142.6 s, the same rows (benchmarks/recommend_shares.py, 2026-11-29).
SHARED_FROM = 5_000
MAX_SHARES = 8
SAID_FAILURES = 5  # groups named one line each in the stage's output; the rest counted (all in the table)
ROW_DDL = ", ".join(f"{name} struct<{table.ddl(': ')}>" for name, table in OUTPUTS)


def _window_starts(spark: SparkSession, config: PipelineConfig, groups: list[Group]) -> DataFrame:
    """Per group, its window's start (``window.start_of``): the window's length before its last event, or
    before its last handoff where no member with the agent showed (a group only the broker sees)."""
    members = (lake.rows_of(spark, config.lake_path, catalog.MEMBERS, catalog.GROUP_KEY, groups)
               .groupBy(*catalog.GROUP_KEY).agg(F.max("last_seen_ms").alias("_last_ms")))
    handoffs = (lake.rows_of(spark, config.lake_path, catalog.HANDOFFS, catalog.GROUP_KEY, groups)
                .groupBy(*catalog.GROUP_KEY).agg(F.max(F.coalesce(*window.SINCE["handoffs"])).alias("_handoff_ms")))
    window_ms = window.length_ms(config.recommend_window_h)
    return (members.join(handoffs, list(catalog.GROUP_KEY), "full")
            .select(*catalog.GROUP_KEY, (F.coalesce("_last_ms", "_handoff_ms") - window_ms).alias("_window_start_ms")))


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


def _with_shares(spark: SparkSession, config: PipelineConfig, inputs: DataFrame, settings: dict[Group, BrokerGroups],
                 progress: Progress) -> DataFrame:
    """``inputs`` and, for each group with at least ``SHARED_FROM`` ownership intervals in its window, its
    candidates' replays priced in shares, one task each (``group_pass.priced_share``): a large group's
    what-if (most of the stage's time) spreads over the cores instead of one task's."""
    group = list(catalog.GROUP_KEY)
    large = [tuple(r) for r in inputs.where(F.col("source") == "intervals").groupBy(*group).count()
             .where(F.col("count") >= SHARED_FROM).select(*group).collect()]
    shares = min(spark.sparkContext.defaultParallelism, MAX_SHARES)
    if not large or shares < 2:
        return inputs
    progress(f"recommend: {len(large)} large group(s), each priced in {shares} shares")
    each = spark.createDataFrame([(*g, k) for g in large for k in range(shares)],
                                 "cluster_id string, group_id string, shard int")

    def share(rows: list[dict]) -> list[dict]:
        broker = settings[(rows[0]["cluster_id"], rows[0]["group_id"])]
        return priced_share(rows, broker, config.recommend_window_h, (rows[0]["shard"], shares))

    priced = apply_per_group(inputs.join(F.broadcast(each), group), [*group, "shard"], share, PRICED_DDL,
                             tasks_by="shard")
    return inputs.unionByName(priced.withColumn("source", F.lit(PRICED)), allowMissingColumns=True)


def group_settings(config: PipelineConfig, groups: list[Group], progress: Progress) -> dict[Group, BrokerGroups]:
    """The KIP-848 settings each group is priced with: read from the telemetry cluster for the groups
    on it (``pipelines.cluster``), else the pipeline's settings, assumed and said; one line says which."""
    learned = cluster.learn(config, groups)
    assumed = BrokerGroups(config.kip848_heartbeat_ms, config.kip848_session_timeout_ms, False, learned.unread)
    read = {g: BrokerGroups(s.heartbeat_ms, s.session_timeout_ms, True, s.read_from) for g, s in learned.groups.items()}
    seen = sorted({(s.heartbeat_ms, s.session_timeout_ms) for s in read.values()})
    progress(f"recommend: KIP-848 group settings read from the cluster for {len(read)} of {len(groups)} group(s)"
             + (f" (heartbeat/session ms: {', '.join(f'{h}/{t}' for h, t in seen)})" if seen else "")
             + (f"; the others assumed {assumed.heartbeat_ms}/{assumed.session_timeout_ms}: {learned.unread}"
                if len(read) < len(groups) else ""))
    return {g: read.get(g, assumed) for g in groups}


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """What-if and recommendations for the groups with events validated since recommend last ran."""
    todo = pending(spark, config, "recommend", progress)
    if todo is None:
        return {"groups": 0}
    high, groups = todo
    lake_path = config.lake_path
    settings = group_settings(config, groups, progress)

    def recommend(group: list[dict]) -> list[dict]:
        broker = settings[(group[0]["cluster_id"], group[0]["group_id"])]
        outputs = recommend_or_fail(group, lake_path, broker, config.recommend_window_h, high, config.topic)
        return [{**dict.fromkeys(name for name, _ in OUTPUTS), name: row}
                for (name, _), rows in zip(OUTPUTS, outputs) for row in rows]

    inputs = _with_shares(spark, config, _inputs(spark, config, groups), settings, progress)
    with lake.spilled(spark, apply_per_group(inputs, catalog.GROUP_KEY, recommend, ROW_DDL),
                      f"{config.checkpoint_path}/recommend_rows") as rows:
        lake.land_together([partial(lake.replace_scope, spark, lake_path, table,
                                    rows.where(F.col(name).isNotNull()).select(f"{name}.*"), groups)
                            for name, table in OUTPUTS])
        counts = rows.agg(*[F.count(name).alias(f"{name}s") for name, _ in OUTPUTS]).first().asDict()
        failed = [r.asDict() for r in rows.where(F.col("failure").isNotNull()).select("failure.*")
                  .orderBy(*catalog.GROUP_KEY).limit(SAID_FAILURES).collect()] if counts["failures"] else []
    for line in failure_lines(failed, counts["failures"], len(groups)):
        progress(line)
    lake.set_stage_mark(spark, lake_path, "recommend", high)
    return {"groups": len(groups), **counts}


def failure_lines(failed: list[dict], count: int, groups: int) -> list[str]:
    """One line per failed group (the first ``SAID_FAILURES``), and one for the rest: which group, what
    was raised where, and that every other group's results are written."""
    table = catalog.RECOMMEND_FAILURES.path
    lines = []
    for f in failed:
        cluster = f" (cluster {f['cluster_id']})" if f["cluster_id"] else ""
        lines.append(f"recommend: group {f['group_id']!r}{cluster} failed: {f['error']} at {f['raised_at']}; "
                     f"the other {groups - count} group(s) are written, this one's error is in {table}")
    if count > len(failed):
        lines.append(f"recommend: {count - len(failed)} more group(s) failed: see {table}")
    return lines
