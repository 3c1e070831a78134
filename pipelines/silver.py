"""Silver: member state timelines and commits, from the validated events.

(``silver/events`` itself is written by the validate stage, the gate into this layer.)
Incremental by group (``pipelines.scope``).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import PipelineConfig, Progress
from pipelines.scope import events_of, pending


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


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """Member states and commits of the groups with new validated events."""
    todo = pending(spark, config, "silver", progress)
    if todo is None:
        return {"groups": 0}
    high, groups = todo
    # Not cached: each output reads a few columns of one kind from Parquet, which costs
    # less than caching every typed column of every event.
    events = events_of(spark, config, groups, high)
    for table, rows in ((catalog.MEMBER_STATES, member_states(events)), (catalog.COMMITS, commits(events))):
        lake.replace_scope(spark, config.lake_path, table, rows, groups)
    lake.set_stage_mark(spark, config.lake_path, "silver", high)
    return {"groups": len(groups)}
