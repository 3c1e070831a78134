"""Gold metrics per group, per hour and per day, overall (cause ``all``) and by cause.

A handoff counts in the period of the episode it belongs to, under its own cause (what
made its previous owner let go: ``pipelines.gold.causes``), so a busy hour's restart,
crash and stall costs stay apart; rebalances count under their episode's cause. The
duplicates and the pause are sums of the handoffs' figures (each exact, else its lower
bound: ``pipelines.measures``), their ``_upper`` sums beside them. The duplicate rate divides by the records processed
in the period, from the members' progress events. Revoke callback time counts each
revoke event once, in the episode of its first handoff (a revoke covers several
partitions, which a slow reassignment can spread over two episodes). Commit-on-revoke
coverage is the share of graceful handoffs whose owner committed inside the revoke.
``coverage`` is the share of the group's partition-time its instrumented members held
(``covered_s`` / ``owned_s``, from ``gold/coverage``: ``pipelines.gold.unseen``; ``broker_coverage`` the
share the broker's log showed, ``pipelines.gold.broker_gold``), a property of
the group and period that every cause's row carries, like the records processed: below 1,
members without the agent held the rest, and the figures count only what the agent saw.

Everything is summed per group, hour and cause first, and the days and the ``all``
cause are sums of those rows: the handoffs are aggregated once, where one aggregation
per grain and cause read each handoff four times.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.catalog import GROUP_KEY

KEYS = [*GROUP_KEY, "grain", "period_start", "cause"]
FIGURES = ["pause_s", "pause_upper_s", "duplicates", "duplicates_upper"]  # summed from gold/handoffs as they are


def _hour(time_ms: str) -> Column:
    return F.date_trunc("hour", F.timestamp_millis(time_ms)).alias("period_start")


def _hourly(handoffs: DataFrame, episodes: DataFrame) -> DataFrame:
    """Additive counts per (group, hour of the episode's start, cause)."""
    keys = [*GROUP_KEY, "period_start", "cause"]
    revoked = F.col("release_kind") == "revoked"
    rebalances = episodes.groupBy(*GROUP_KEY, _hour("start_ms"), "cause").agg(F.count("*").alias("rebalances"))
    h = handoffs.where(F.col("episode_id").isNotNull())
    moved = h.groupBy(*GROUP_KEY, _hour("episode_start_ms"), "cause").agg(
        F.count("*").alias("partitions_moved"),
        *[F.sum(figure).alias(figure) for figure in FIGURES],
        F.count(F.when(~revoked, 1)).alias("lost_partitions"),
        F.count(F.when(revoked, F.col("commit_in_revoke"))).alias("graceful_handoffs"),
        F.count(F.when(revoked & F.col("commit_in_revoke"), 1)).alias("graceful_committed_in_revoke"))
    first = F.min_by(F.struct("episode_start_ms", "cause"), "episode_start_ms")
    revokes = (h.where("revoke_event_id IS NOT NULL").groupBy(*GROUP_KEY, "revoke_event_id")
               .agg(first.alias("e"), F.first("revoke_callback_ms").alias("callback_ms"))
               .groupBy(*GROUP_KEY, _hour("e.episode_start_ms"), F.col("e.cause").alias("cause"))
               .agg((F.sum("callback_ms") / 1000.0).alias("revoke_callback_s")))
    return rebalances.join(moved, keys, "left").join(revokes, keys, "left")


def _rolled_up(hourly: DataFrame, keys: list[str]) -> DataFrame:
    """``hourly`` (keys but ``grain``, hours in ``period_start``) summed per grain (hour,
    day) and, where there is a ``cause``, per cause and for ``all``."""
    day = hourly.withColumn("period_start", F.date_trunc("day", "period_start"))
    grains = hourly.withColumn("grain", F.lit("hour")).unionByName(day.withColumn("grain", F.lit("day")))
    if "cause" in keys:
        grains = grains.unionByName(grains.withColumn("cause", F.lit("all")))
    measures = [c for c in hourly.columns if c not in keys]
    return grains.groupBy(*keys).agg(*[F.sum(c).alias(c) for c in measures])


def records_processed(events: DataFrame) -> DataFrame:
    """One row per group and hour: the records its members reported processed (progress events)."""
    return (events.where("kind = 'progress'")
            .select(*GROUP_KEY, "event_time_ms", F.explode("progress.partitions").alias("p"))
            .groupBy(*GROUP_KEY, _hour("event_time_ms").alias("hour_start"))
            .agg(F.sum("p.processed").alias("records_processed")))


def group_metrics(handoffs: DataFrame, episodes: DataFrame, processed: DataFrame, coverage: DataFrame) -> DataFrame:
    """One row per (group, grain, period_start, cause); ``processed``: ``records_processed``'s rows,
    ``coverage``: ``gold/coverage``'s."""
    processed = processed.withColumnRenamed("hour_start", "period_start")
    coverage = coverage.withColumnRenamed("hour_start", "period_start")
    out = (_rolled_up(_hourly(handoffs, episodes), KEYS)
           .join(_rolled_up(processed, KEYS[:-1]), KEYS[:-1], "left")
           .join(_rolled_up(coverage, KEYS[:-1]), KEYS[:-1], "left"))
    counts = ["rebalances", "partitions_moved", *FIGURES, "lost_partitions"]
    out = out.fillna(0, subset=[*counts, "revoke_callback_s", "records_processed"])
    graceful, processed = F.col("graceful_handoffs"), F.col("records_processed")
    return out.select(
        *KEYS, *counts,
        F.when(graceful > 0, F.col("graceful_committed_in_revoke") / graceful).alias("commit_on_revoke_coverage"),
        "revoke_callback_s", "records_processed",
        F.when(processed > 0, F.col("duplicates") / processed).alias("duplicate_rate"),
        "covered_s", "owned_s", F.when(F.col("owned_s") > 0, F.col("covered_s") / F.col("owned_s")).alias("coverage"),
        "broker_covered_s",
        # at most 1: a tenure runs from one change to the next, through time the agent's intervals leave out
        F.when(F.col("owned_s") > 0, F.least(F.lit(1.0), F.col("broker_covered_s") / F.col("owned_s")))
        .alias("broker_coverage"))
