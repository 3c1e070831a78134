"""Gold metrics per group, per hour and per day, overall (cause ``all``) and by cause.

A handoff counts in the period and cause of the episode it belongs to. Duplicates
use the confirmed count where there is one and the lower bound for crashes (the
upper-bound sum is beside it). The duplicate rate divides by the records processed
in the period, from the members' progress events. Revoke callback time counts each
revoke event once (a revoke covers several partitions). Commit-on-revoke coverage is
the share of graceful handoffs whose owner committed inside the revoke.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

GRAINS = ("hour", "day")


def _periods(df: DataFrame, time_ms: str) -> DataFrame:
    grains = df.sparkSession.createDataFrame([(g,) for g in GRAINS], "grain string")
    return df.crossJoin(grains).withColumn(
        "period_start", F.expr(f"date_trunc(grain, timestamp_millis({time_ms}))"))


def _by_cause_and_all(df: DataFrame) -> DataFrame:
    return df.unionByName(df.withColumn("cause", F.lit("all")))


def group_metrics(handoffs: DataFrame, episodes: DataFrame, events: DataFrame) -> DataFrame:
    """One row per (group, grain, period_start, cause).

    A handoff carries its episode's start and cause, so its period needs no join with
    the episodes (the join cost a shuffle of every handoff, twice)."""
    keys = ["group_id", "grain", "period_start", "cause"]
    rebalances = (_periods(_by_cause_and_all(episodes.select("group_id", "start_ms", "cause")), "start_ms")
                  .groupBy(*keys).agg(F.count("*").alias("rebalances")))
    h = _periods(_by_cause_and_all(handoffs.where(F.col("episode_id").isNotNull())), "episode_start_ms")
    revokes = (h.where("revoke_event_id IS NOT NULL").select(*keys, "revoke_event_id", "revoke_callback_ms")
               .dropDuplicates([*keys, "revoke_event_id"]).groupBy(*keys)
               .agg((F.sum("revoke_callback_ms") / 1000.0).alias("revoke_callback_s")))
    moved = h.groupBy(*keys).agg(
        F.count("*").alias("partitions_moved"),
        F.sum("unavailable_s").alias("partition_seconds_unavailable"),
        F.sum("unavailable_lower_s").alias("partition_seconds_unavailable_lower"),
        F.sum("unavailable_upper_s").alias("partition_seconds_unavailable_upper"),
        F.sum(F.coalesce("duplicates_confirmed", "duplicates_lower")).alias("duplicates"),
        F.sum(F.coalesce("duplicates_confirmed", "duplicates_upper")).alias("duplicates_upper"),
        F.sum(F.when(F.col("release_kind") != "revoked", 1).otherwise(0)).alias("lost_partitions"),
        F.avg(F.when(F.col("release_kind") == "revoked", F.col("commit_in_revoke").cast("int")))
        .alias("commit_on_revoke_coverage"))
    processed = (_periods(events.where("kind = 'progress'")
                          .select("group_id", "event_time_ms", F.explode("progress.partitions").alias("p")),
                          "event_time_ms")
                 .groupBy("group_id", "grain", "period_start").agg(F.sum("p.processed").alias("records_processed")))
    out = (rebalances.join(moved, keys, "left").join(revokes, keys, "left")
           .join(processed, ["group_id", "grain", "period_start"], "left"))
    zero = ["partitions_moved", "partition_seconds_unavailable", "partition_seconds_unavailable_lower",
            "partition_seconds_unavailable_upper", "duplicates", "duplicates_upper", "lost_partitions",
            "revoke_callback_s", "records_processed"]
    out = out.fillna(0, subset=zero)
    return out.withColumn("duplicate_rate", F.when(F.col("records_processed") > 0,
                                                   F.col("duplicates") / F.col("records_processed")))
