"""Silver: member state timelines and commits, from the typed events.

The partition ownership intervals, also a silver table, are built by the gold stage, in
its per-group pass (``pipelines.jobs.run_gold``).

Incremental by group: the groups that got events since the stage last ran (plus, with
``since_ms``, every group with events after that time) are recomputed from all their
events and replaced, so a late event corrects what it belongs to and a rerun with no new
events writes nothing.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines import lake
from pipelines.config import PipelineConfig


def changed_groups(spark: SparkSession, config: PipelineConfig, after_batch: int, upto_batch: int,
                   since_ms: int | None) -> list[str]:
    """Groups with events validated in (after_batch, upto_batch], or with events since ``since_ms``.

    A list, not a DataFrame: the reads and writes downstream take it as a literal list,
    which Delta skips files by (a join skips none)."""
    events = lake.read(spark, lake.table_path(config.lake_path, lake.EVENTS))
    cond = (F.col("validate_batch") > after_batch) & (F.col("validate_batch") <= upto_batch)
    if since_ms is not None:
        cond = cond | (F.col("event_time_ms") >= since_ms)
    return sorted(r[0] for r in events.where(cond).select("group_id").distinct().collect())


def events_of(spark: SparkSession, config: PipelineConfig, groups: list[str], upto_batch: int) -> DataFrame:
    """The groups' events of validation batches up to ``upto_batch`` (later ones may be in flight)."""
    return (lake.rows_of(spark, lake.table_path(config.lake_path, lake.EVENTS), "group_id", groups)
            .where(F.col("validate_batch") <= upto_batch))


def member_states(events: DataFrame) -> DataFrame:
    """One row per state a member was in: from when to when (open-ended while current)."""
    w = Window.partitionBy("group_id", "agent_id").orderBy("event_time_ms", "seq")
    st = events.where("kind = 'state_transition'")
    return st.select(
        "group_id", "agent_id", "member_id", "group_instance_id", "host", "client_id", "event_id",
        F.col("state_transition.from_state").alias("from_state"), F.col("state_transition.to_state").alias("state"),
        F.col("state_transition.reason").alias("reason"), F.col("state_transition.allowed").alias("allowed"),
        F.col("event_time_ms").alias("start_ms"), F.lead("event_time_ms").over(w).alias("end_ms"))


def commits(events: DataFrame) -> DataFrame:
    """One row per partition offset in a commit event."""
    return (events.where("kind = 'commit'")
            .select("group_id", "agent_id", "member_id", "event_id", "event_time_ms",
                    F.col("commit.mode").alias("mode"), F.col("commit.sync").alias("sync"),
                    F.col("commit.in_revoke").alias("in_revoke"), F.col("commit.error").alias("request_error"),
                    F.col("commit.duration_ms").alias("duration_ms"),
                    F.explode("commit.offsets").alias("o"))
            .select("*", F.col("o.topic").alias("topic"), F.col("o.partition").alias("partition"),
                    F.col("o.offset").alias("offset"), F.col("o.error").alias("error")).drop("o"))


def run_silver(spark: SparkSession, config: PipelineConfig, since_ms: int | None = None,
               progress=print) -> dict[str, int]:
    high = lake.validated_through(spark, config.lake_path)
    if high < 0:
        progress("silver: no events yet (run validate first); nothing to do")
        return {"groups": 0}
    last = lake.stage_mark(spark, config.lake_path, "silver")
    groups = changed_groups(spark, config, last, high, since_ms)
    if not groups:
        progress("silver: no new events; nothing to do")
        return {"groups": 0}
    progress(f"silver: recomputing {len(groups)} group(s) with new events")
    # Not cached: each output reads a few columns of one kind from Parquet, which costs
    # less than caching every typed column of every event.
    events = events_of(spark, config, groups, high)
    outputs = [
        (lake.MEMBER_STATES, member_states(events), ["event_id"]),
        (lake.COMMITS, commits(events), ["event_id", "topic", "partition"]),
    ]
    for table, rows, keys in outputs:
        lake.replace_scope(spark, lake.table_path(config.lake_path, table), rows, keys, "group_id", groups)
    lake.set_stage_mark(spark, config.lake_path, "silver", high)
    return {"groups": len(groups)}
