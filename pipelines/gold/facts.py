"""Events cut into per-partition facts, in Spark: what the ownership fold reads
(``pipelines.gold.ownership``). The one place events become facts.

Why Spark owns the cut: most events are progress and commits, each touching many
partitions; Spark explodes their typed body columns natively and ``runs`` sums them before
any row reaches Python, so the Python fold reads a few flat rows per ownership interval and
parses no JSON. A cut in Python would move every event through Arrow into the workers first.
The one thing that crosses partitions, whether a member had stalled when it reported progress,
is decided here from its own events: a stall (a move to the stale state) lasts until the member
is next assigned, revoked or lost anything.

Most facts are progress and commits, and the fold only sums them into their member's latest
interval: ``runs`` sums each run of them (a member's facts of one kind between two facts that
change the partition's intervals) into one fact in Spark, so the Python fold walks a few
facts per ownership interval, not one per event.
"""
from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from consumer_agent.contract import OFFSET_UNKNOWN, STALE_STATE
from pipelines.catalog import GROUP_KEY
from pipelines.gold.ownership import CHANGES

# One partition's share of an event: the envelope the intervals read, and the body fields
# of its kind (the others null).
#
# A progress fact carries what the fold takes from it: records processed, the log end it saw
# (position + lag; of a run, the first and, ``first_ms``, when), the position, last processed
# offset and lag, the rate and the interval since the agent's previous tick, the interval of a
# timer's tick only (``timer_interval_ms``: a tick at a first record or after a poll gap comes
# early, ``consumer_agent.progress``) and the interval the agent promises (``next_due_ms``), and
# (``moved_ms``) the previous tick's time if records were handed out since (of a run, the latest);
# a commit fact its offset and (``first_ms``, ``first_offset``) the earliest commit's time and
# offset; a release its ``handed_out`` (the agent's word). So a run of progress or commit facts
# can be summed into one fact of the same shape (``runs``) and the Python fold walks the runs,
# not every event.
FACT_DDL = ("cluster_id string, group_id string, topic string, partition bigint, kind string, event_id string, "
            "event_time_ms bigint, "
            "agent_id string, seq bigint, member_id string, group_instance_id string, host string, client_id string, "
            "generation bigint, position bigint, last_processed_offset bigint, committed_offset bigint, lag bigint, "
            "processed bigint, log_end bigint, max_rate double, interval_ms double, moved_ms bigint, "
            "callback_ms double, revoke_committed boolean, "
            "offset bigint, first_ms bigint, first_offset bigint, offset_error string, request_error string, "
            "in_revoke boolean, window_ms double, timestamp_ms bigint, stalled boolean, uncommitted bigint, "
            "uncommitted_samples bigint, timer_interval_ms double, next_due_ms double, handed_out boolean")
ENVELOPE = [*GROUP_KEY, "kind", "event_id", "event_time_ms", "agent_id", "seq", "member_id", "group_instance_id",
            "host", "client_id", "generation"]
NEVER = -(2 ** 63)  # before every event: where a stall carried over from the last run starts


def _typed(rows: DataFrame, *keep: str) -> DataFrame:
    """``rows`` with every fact column, in the fact schema's order and types (missing ones null), and ``keep``."""
    schema = StructType.fromDDL(FACT_DDL)  # parsed by the JVM, so not at import
    return rows.select(*[(F.col(f.name) if f.name in rows.columns else F.lit(None)).cast(f.dataType).alias(f.name)
                         for f in schema.fields], *keep)


def _body_field(events: DataFrame, path: str) -> Column:
    """``path`` (``body.field``) of the typed events, or null where their table predates the field (a body
    field added within v1 reaches a lake's events table with the first event that carries it)."""
    struct, name = path.split(".", 1)
    fields = events.schema[struct].dataType
    return F.col(path) if name in fields.names else F.lit(None)


def _element_field(events: DataFrame, array: str, name: str) -> Column:
    """Field ``name`` of ``p``, an exploded element of the body array ``array`` (``struct.array``), or null
    where the events table predates it."""
    struct, field = array.split(".", 1)
    element = events.schema[struct].dataType[field].dataType.elementType
    return F.col(f"p.{name}") if name in element.names else F.lit(None)


def uncommitted_records(last_processed: Column, committed: Column) -> Column:
    """Records a member had processed but not committed at a progress tick: what a graceful
    handoff at that moment would re-deliver (null where either offset is unknown). Sampled
    every progress tick, they give the what-if's uncommitted window many more observations than
    the few revokes a run has (``simulator.cost_model.fit``)."""
    known = (last_processed >= 0) & (committed >= 0)
    return F.when(known, F.greatest(last_processed + 1 - committed, F.lit(0)))


def _is_stale() -> Column:
    return (F.col("kind") == "state_transition") & (F.col("state_transition.to_state") == STALE_STATE)


def stalls(events: DataFrame, stalled_before: DataFrame) -> DataFrame:
    """Per agent, each stall as (cluster_id, group_id, agent_id, from (time, seq), to (time, seq) or null
    while it lasts): from the agents' stale moves and changes among ``events``, and the stalls
    ``stalled_before`` (cluster_id, group_id, agent_id) carried over from before them."""
    toggles = (events.where(_is_stale() | F.col("kind").isin(list(CHANGES)))
               .select(*GROUP_KEY, "agent_id", "event_time_ms", "seq", _is_stale().alias("stale"))
               .unionByName(stalled_before.select(*GROUP_KEY, "agent_id", F.lit(NEVER).alias("event_time_ms"),
                                                  F.lit(NEVER).alias("seq"), F.lit(True).alias("stale"))))
    nxt = Window.partitionBy(*GROUP_KEY, "agent_id").orderBy("event_time_ms", "seq")
    return (toggles.withColumn("until", F.lead(F.struct("event_time_ms", "seq")).over(nxt)).where("stale")
            .select(*GROUP_KEY, "agent_id", F.struct("event_time_ms", "seq").alias("since"), "until"))


def stalled_at(stall_rows: DataFrame, time_ms: Column) -> DataFrame:
    """(cluster_id, group_id, agent_id) of the members stalled just before ``time_ms`` (a column of
    ``stall_rows``' groups)."""
    return (stall_rows.where((F.col("since.event_time_ms") < time_ms)
                             & (F.col("until").isNull() | (F.col("until.event_time_ms") >= time_ms)))
            .select(*GROUP_KEY, "agent_id").distinct())


def facts(events: DataFrame, stall_rows: DataFrame) -> DataFrame:
    """Every partition's share of ``events`` (typed silver events), as rows of ``FACT_DDL``."""
    env = [F.col(c) for c in ENVELOPE]
    changes = (events.where(F.col("kind").isin(list(CHANGES)))
               .select(*env, F.explode("partitions_change.partitions").alias("p"),
                       F.col("partitions_change.callback_ms").alias("callback_ms"),
                       F.coalesce("partitions_change.commit_on_revoke.committed", F.lit(False))
                       .alias("revoke_committed"))
               .select("*", "p.topic", "p.partition", "p.position", "p.last_processed_offset", "p.committed_offset",
                       _element_field(events, "partitions_change.partitions", "handed_out").alias("handed_out")))
    fetches = (events.where("kind = 'first_fetch'")
               .select(*env, "first_fetch.topic", "first_fetch.partition", "first_fetch.offset",
                       "first_fetch.window_ms", "first_fetch.timestamp_ms"))
    position, lag, interval_ms = F.col("p.position"), F.col("p.lag"), F.col("interval_ms")
    known_end = lag.isNotNull() & position.isNotNull() & ~position.isin(OFFSET_UNKNOWN, 0)
    uncommitted = uncommitted_records(F.col("p.last_processed_offset"), F.col("p.committed_offset"))
    cause = _body_field(events, "progress.cause")
    progress = (events.where("kind = 'progress'")
                .select(*env, F.explode("progress.partitions").alias("p"), "progress.interval_ms",
                        F.when(F.coalesce(cause, F.lit("timer")) == "timer", F.col("progress.interval_ms"))
                        .alias("timer_interval_ms"), _body_field(events, "progress.next_due_ms").alias("next_due_ms"))
                .select("*", "p.topic", "p.partition", "p.position", "p.last_processed_offset", "p.lag", "p.processed",
                        F.when(known_end, position + lag).alias("log_end"),
                        F.when(known_end, F.col("event_time_ms")).alias("first_ms"),
                        F.when(interval_ms > 0, F.col("p.processed") / (interval_ms / 1000.0)).alias("max_rate"),
                        uncommitted.alias("uncommitted"),
                        F.when(uncommitted.isNotNull(), F.lit(1)).alias("uncommitted_samples"),
                        F.when(F.col("p.processed") > 0, (F.col("event_time_ms") - interval_ms).cast("bigint"))
                        .alias("moved_ms")))
    stalled = F.broadcast(stall_rows.alias("s"))
    progress = (progress.alias("e").join(stalled, (F.col("e.group_id") == F.col("s.group_id"))
                                         & (F.col("e.cluster_id") == F.col("s.cluster_id"))
                                         & (F.col("e.agent_id") == F.col("s.agent_id"))
                                         & (F.struct("e.event_time_ms", "e.seq") > F.col("s.since"))
                                         & (F.col("s.until").isNull()
                                            | (F.struct("e.event_time_ms", "e.seq") < F.col("s.until"))),
                                         "left")
                .select("e.*", F.col("s.agent_id").isNotNull().alias("stalled")))  # stalls of an agent never overlap
    commits = (events.where("kind = 'commit'")
               .select(*env, F.explode("commit.offsets").alias("o"), F.col("commit.error").alias("request_error"),
                       F.col("commit.in_revoke").alias("in_revoke"))
               .select("*", "o.topic", "o.partition", "o.offset", F.col("event_time_ms").alias("first_ms"),
                       F.col("o.offset").alias("first_offset"), F.col("o.error").alias("offset_error")))
    return (_typed(changes).unionByName(_typed(fetches)).unionByName(_typed(progress.drop("p")))
            .unionByName(_typed(commits)))


# Facts that open, close or start reading an interval: each ends the runs before it.
RUN_ENDS = (*CHANGES, "first_fetch")


def runs(rows: DataFrame) -> DataFrame:
    """``rows`` (facts with their group's ``before_ms``) with each run of a member's progress or
    commit facts summed into one fact, placed where its last one was.

    A run is cut at every fact that changes the partition's intervals (``RUN_ENDS``: which
    interval a member's fact updates, and whether the next owner has read, change only there)
    and at ``before_ms``, where the fold keeps its state. What the fold takes from a run equals
    what it takes from its facts one by one: the sum of records, the first log end and its
    time, the last position, offsets and lag, the highest rate, interval (of any tick, and of the
    timer's), promised interval and ``moved_ms``; of commits
    the highest offset, and the highest at the earliest millisecond (``PartitionFold.feed``). Stalled
    progress and failed commits, which the fold ignores, are dropped here.
    """
    upto = (Window.partitionBy(*GROUP_KEY, "topic", "partition").orderBy("event_time_ms", "agent_id", "seq")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    ends = F.col("kind").isin(list(RUN_ENDS))
    cut = (rows.withColumn("_run", F.sum(ends.cast("int")).over(upto))
           .withColumn("_after", F.col("event_time_ms") >= F.col("before_ms")))
    keys = [*GROUP_KEY, "topic", "partition", "before_ms", "agent_id", "kind", "_run", "_after"]
    progress = (cut.where((F.col("kind") == "progress") & ~F.col("stalled")).groupBy(*keys)
                .agg(F.max(F.struct("event_time_ms", "seq", "position", "last_processed_offset", "lag")).alias("last"),
                     F.sum("processed").alias("processed"), F.max("max_rate").alias("max_rate"),
                     F.max("interval_ms").alias("interval_ms"), F.max("moved_ms").alias("moved_ms"),
                     F.max("timer_interval_ms").alias("timer_interval_ms"), F.max("next_due_ms").alias("next_due_ms"),
                     F.sum("uncommitted").alias("uncommitted"),
                     F.sum("uncommitted_samples").alias("uncommitted_samples"),
                     F.min(F.when(F.col("log_end").isNotNull(), F.struct("event_time_ms", "seq", "log_end")))
                     .alias("first"))
                .select(*keys, "last.*", "processed", "max_rate", "interval_ms", "moved_ms", "timer_interval_ms",
                        "next_due_ms", "uncommitted", "uncommitted_samples", "first.log_end",
                        F.col("first.event_time_ms").alias("first_ms"), F.lit(False).alias("stalled")))
    ok = (F.col("request_error").isNull() & F.col("offset_error").isNull() & F.col("offset").isNotNull()
          & (F.col("offset") != OFFSET_UNKNOWN))
    commits = (cut.where((F.col("kind") == "commit") & ok).groupBy(*keys)
               .agg(F.max(F.struct("event_time_ms", "seq")).alias("last"), F.max("offset").alias("offset"),
                    F.min(F.struct("event_time_ms", (-F.col("offset")).alias("negated"))).alias("first"),
                    F.bool_or("in_revoke").alias("in_revoke"))
               .select(*keys, "last.*", "offset", F.col("first.event_time_ms").alias("first_ms"),
                       (-F.col("first.negated")).alias("first_offset"), "in_revoke"))
    return reduce(DataFrame.unionByName, [_typed(part, "before_ms") for part in (cut.where(ends), progress, commits)])
