"""Silver: member state timelines and commits, from the validated events.

(``silver/events`` itself is written by the validate stage, the gate into this layer.)
Incremental by validation batch: a run reads the events of the batches validated since
silver last ran, never a group's history. Commits are those events' commit offsets, written
by batch; a member's states are recomputed from its stored states and its new transitions
(a state's end is the next one's start, so a late transition corrects the state before it).
"""
from __future__ import annotations

from functools import partial

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import PipelineConfig, Progress
from pipelines.scope import changed_groups

STATE_COLUMNS = [c for c in catalog.MEMBER_STATES.column_names() if c != "end_ms"]


def transitions(events: DataFrame) -> DataFrame:
    """One row per state transition: the state a member entered, from when (no end yet)."""
    return events.where("kind = 'state_transition'").select(
        *catalog.GROUP_KEY, "agent_id", "member_id", "group_instance_id", "host", "client_id", "event_id", "seq",
        F.col("state_transition.from_state").alias("from_state"), F.col("state_transition.to_state").alias("state"),
        F.col("state_transition.reason").alias("reason"), F.col("state_transition.allowed").alias("allowed"),
        F.col("event_time_ms").alias("start_ms"))


def member_states(entered: DataFrame) -> DataFrame:
    """Each state entered (``transitions``' rows) until the member's next one (open while current)."""
    w = Window.partitionBy(*catalog.GROUP_KEY, "agent_id").orderBy("start_ms", "seq")
    return entered.withColumn("end_ms", F.lead("start_ms").over(w))


def commits(events: DataFrame) -> DataFrame:
    """One row per partition offset in a commit event."""
    return (events.where("kind = 'commit'")
            .select(*catalog.GROUP_KEY, "agent_id", "member_id", "event_id", "event_time_ms",
                    F.col("commit.mode").alias("mode"), F.col("commit.sync").alias("sync"),
                    F.col("commit.in_revoke").alias("in_revoke"), F.col("commit.error").alias("request_error"),
                    F.col("commit.duration_ms").alias("duration_ms"),
                    F.explode("commit.offsets").alias("o"), "validate_batch")
            .select("*", F.col("o.topic").alias("topic"), F.col("o.partition").alias("partition"),
                    F.col("o.offset").alias("offset"), F.col("o.error").alias("error"))
            .select(*catalog.COMMITS.column_names()))


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """Member states and commits of the events validated since silver last ran."""
    high = lake.validated_through(spark, config.lake_path)
    if high < 0:
        progress("silver: no events yet (run validate first); nothing to do")
        return {"groups": 0}
    after = lake.stage_mark(spark, config.lake_path, "silver")
    groups = changed_groups(spark, config, after, high)
    if not groups:
        progress("silver: no new events; nothing to do")
        return {"groups": 0}
    progress(f"silver: the new events of {len(groups)} group(s)")
    new: Column = (F.col("validate_batch") > after) & (F.col("validate_batch") <= high)
    if config.since_ms is not None:
        new = new | ((F.col("event_time_ms") >= config.since_ms) & (F.col("validate_batch") <= high))
    events = lake.rows_of(spark, config.lake_path, catalog.EVENTS, catalog.GROUP_KEY, groups).where(new)
    batch_range = f"(validate_batch > {int(after)} AND validate_batch <= {int(high)})"
    if config.since_ms is not None:
        batch_range += f" OR (event_time_ms >= {int(config.since_ms)} AND validate_batch <= {int(high)})"
    entered = transitions(events)
    if lake.exists(spark, config.lake_path, catalog.MEMBER_STATES):
        stored = lake.declared(lake.rows_of(spark, config.lake_path, catalog.MEMBER_STATES, catalog.GROUP_KEY, groups),
                               catalog.MEMBER_STATES).select(*STATE_COLUMNS)
        entered = entered.unionByName(stored.join(entered.select("event_id"), "event_id", "left_anti"))
    with lake.spilled(spark, member_states(entered), f"{config.checkpoint_path}/silver_states") as states:
        lake.land_together([
            partial(lake.replace_where, spark, config.lake_path, catalog.COMMITS, commits(events), batch_range),
            partial(lake.replace_scope, spark, config.lake_path, catalog.MEMBER_STATES, states, groups)])
    lake.set_stage_mark(spark, config.lake_path, "silver", high)
    return {"groups": len(groups)}
