"""The sequence numbers validation has seen per agent, kept as runs, so that a batch's gaps
(lost telemetry) are found without rereading the agents' history.

An agent numbers its events from 0 without gaps (the contract's ``seq``), so what the
validated events cover is, per agent, a few runs of consecutive numbers: one, unless
telemetry was lost or is still late. ``catalog.SEQUENCES`` keeps them: after each batch, one
row per agent the batch brought, with every run validated through it (cumulative). A batch
reads, per agent, the row of the latest earlier batch, so a replayed batch (after a crash)
gets the gaps of its first attempt; rows that a later one supersedes stay until the daily
maintenance prunes them (``prune``), so each batch writes one commit here.

The gap before an event is the count of numbers missing between it and the highest number
below it known so far (in earlier batches or this one); a number already known (a resent
event) has none, and neither opens nor hides a gap.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.catalog import BRONZE_KEYS

RUN_DDL = "agent_id string, group_id string, lo bigint, hi bigint"


def known_runs(spark: SparkSession, lake_path: str, agents: DataFrame, batch_id: int) -> DataFrame | None:
    """Rows of ``RUN_DDL``: the runs of the numbers of ``agents`` (agent_id) validated before
    batch ``batch_id``; None when there are none."""
    table = catalog.SEQUENCES
    if not lake.exists(spark, lake_path, table):
        return None
    rows = (lake.read(spark, lake_path, table).where(F.col("validate_batch") < batch_id)
            .join(F.broadcast(agents), "agent_id", "left_semi"))
    latest = Window.partitionBy("agent_id").orderBy(F.desc("validate_batch"))
    runs = (rows.withColumn("_n", F.row_number().over(latest)).where("_n = 1")
            .select("agent_id", "group_id", F.explode("runs").alias("r"))
            .select("agent_id", "group_id", "r.lo", "r.hi"))
    return None if runs.limit(1).isEmpty() else runs


def gaps(batch: DataFrame, known: DataFrame | None) -> DataFrame:
    """The bronze keys and ``seq_gap`` of the rows of ``batch`` (agent_id, seq, bronze keys)
    whose gap is not 0, given the ``known`` runs. Rows without an agent or a sequence number
    get none (another rule flags them).

    The highest known number below an event that is not in a known run is the top of a
    run, so each run enters the window as its top alone; an event in a run is a resend."""
    timeline = batch if known is None else batch.unionByName(
        known.select("agent_id", F.col("hi").alias("seq")), allowMissingColumns=True)
    # Rows without a sequence number sit in their own partition: they precede nobody.
    # Known rows have no bronze keys: they come first among equal sequence numbers.
    w = Window.partitionBy("agent_id", F.col("seq").isNull()).orderBy(
        "seq", *[F.col(k).asc_nulls_first() for k in BRONZE_KEYS])
    prev = F.lag("seq").over(w)
    gap = (F.when(F.col("agent_id").isNull() | F.col("seq").isNull(), F.lit(None))
           .when(prev.isNull(), F.col("seq")).when(prev == F.col("seq"), F.lit(0))
           .otherwise(F.col("seq") - prev - 1))
    out = timeline.withColumn("seq_gap", gap).where(F.col(BRONZE_KEYS[0]).isNotNull() & (F.col("seq_gap") != 0))
    if known is not None:
        inside = (F.col("g.agent_id") == F.col("k.agent_id")) & F.col("g.seq").between(F.col("k.lo"), F.col("k.hi"))
        out = out.alias("g").join(F.broadcast(known.alias("k")), inside, "left_anti")
    return out.select(*BRONZE_KEYS, "seq_gap")


def merged_runs(seqs: DataFrame, known: DataFrame | None) -> DataFrame:
    """Rows of ``RUN_DDL``: the runs of ``seqs`` (agent_id, group_id, seq) joined with the
    ``known`` ones, overlapping or adjacent runs merged."""
    numbered = seqs.where(F.col("agent_id").isNotNull() & F.col("seq").isNotNull()).distinct()
    # consecutive numbers share seq - rank (gaps and islands)
    island = F.col("seq") - F.row_number().over(Window.partitionBy("agent_id").orderBy("seq"))
    runs = (numbered.withColumn("_island", island).groupBy("agent_id", "_island")
            .agg(F.first("group_id").alias("group_id"), F.min("seq").alias("lo"), F.max("seq").alias("hi"))
            .drop("_island"))
    if known is not None:
        runs = runs.unionByName(known)
    by_start = Window.partitionBy("agent_id").orderBy("lo", "hi")
    reach = F.max("hi").over(by_start.rowsBetween(Window.unboundedPreceding, -1))  # the runs before it reach
    starts = F.when(reach.isNull() | (F.col("lo") > reach + 1), 1).otherwise(0)
    return (runs.withColumn("_starts", starts)
            .withColumn("_merged", F.sum("_starts").over(by_start.rowsBetween(Window.unboundedPreceding, 0)))
            .groupBy("agent_id", "_merged")
            .agg(F.first("group_id").alias("group_id"), F.min("lo").alias("lo"), F.max("hi").alias("hi"))
            .drop("_merged"))


def record(spark: SparkSession, lake_path: str, batch_id: int, seqs: DataFrame, known: DataFrame | None) -> None:
    """Keep, per agent among ``seqs`` (agent_id, group_id, seq: the batch's validated events),
    every run validated through batch ``batch_id`` (replacing what a crashed attempt wrote)."""
    rows = (merged_runs(seqs, known).groupBy("agent_id")
            .agg(F.first("group_id").alias("group_id"),
                 F.sort_array(F.collect_list(F.struct("lo", "hi"))).alias("runs"))
            .select("agent_id", "group_id", F.lit(batch_id).cast("bigint").alias("validate_batch"), "runs"))
    lake.replace_where(spark, lake_path, catalog.SEQUENCES, rows, f"validate_batch = {int(batch_id)}")


def prune(spark: SparkSession, lake_path: str) -> int:
    """Delete the rows a later one supersedes: per agent, those before its latest row among the
    batches validation has finished (later rows may be a crashed attempt's, which a replay
    ignores, so the row before them stays). Returns the rows deleted."""
    from delta.tables import DeltaTable

    table = catalog.SEQUENCES
    if not lake.exists(spark, lake_path, table):
        return 0
    done = lake.validated_through(spark, lake_path)
    rows = lake.read(spark, lake_path, table)
    latest = (rows.where(F.col("validate_batch") <= done).groupBy("agent_id")
              .agg(F.max("validate_batch").alias("latest")))
    stale = (rows.join(latest, "agent_id").where(F.col("validate_batch") < F.col("latest"))
             .select("agent_id", "validate_batch"))
    count = stale.count()
    if count:
        (DeltaTable.forPath(spark, table.location(lake_path)).alias("t")
         .merge(stale.alias("s"), lake.same_keys(table.keys, "t", "s")).whenMatchedDelete().execute())
    return count


def group_conflicts(batch: DataFrame, known: DataFrame | None) -> DataFrame | None:
    """The bronze keys and ``agent_group`` of the rows of ``batch`` (agent_id, group_id, bronze
    keys) that name another group than their agent's; None when there are none.

    An agent is one consumer object, whose ``group.id`` is fixed when it is made: its events all
    carry one group. Telemetry that moves an agent between groups is broken or forged, and every
    later stage keys a member by its agent (its sequence numbers here, gold/members, the marts).
    The agent's group is the one validation knew it by (``known``, the runs of earlier batches),
    else the group of its first record in the batch (by bronze position, so a replay agrees).
    A first pass compares the batch's distinct (agent, group) pairs only: the rows are read again
    only when some agent has two groups."""
    rows = batch.where(F.col("agent_id").isNotNull() & F.col("group_id").isNotNull())
    pairs = rows.select("agent_id", "group_id").distinct()
    suspects = pairs.groupBy("agent_id").count().where("count > 1").select("agent_id")
    known_groups = None
    if known is not None:
        known_groups = known.select("agent_id", F.col("group_id").alias("known_group")).distinct()
        moved = (pairs.join(known_groups, "agent_id").where(F.col("group_id") != F.col("known_group"))
                 .select("agent_id"))
        suspects = suspects.unionByName(moved)
    suspects = suspects.distinct()
    if suspects.limit(1).isEmpty():
        return None
    first = Window.partitionBy("agent_id").orderBy(*BRONZE_KEYS)
    owned = (rows.join(F.broadcast(suspects), "agent_id", "left_semi")
             .withColumn("agent_group", F.first("group_id").over(first)))
    if known_groups is not None:
        owned = (owned.join(F.broadcast(known_groups), "agent_id", "left")
                 .withColumn("agent_group", F.coalesce("known_group", "agent_group")))
    return owned.where(F.col("group_id") != F.col("agent_group")).select(*BRONZE_KEYS, "agent_group")
