"""The broker stage: every group's rebalance history from each cluster's ``__consumer_offsets``.

Off unless ``config.broker_source`` is on. Per cluster (``config.broker_clusters``, default the
telemetry cluster), a run reads the topic from where the last one stopped to its last stable
offset (or, with ``ingest_until_ms``, to the first record stamped at or after it), through
Spark's Kafka source with ``read_committed`` (an aborted transaction's offsets never count), in
slices of at most ``broker_max_records`` records. Each slice:

1. its records, and the stored state of each group of the partitions it reads, go to one task
   per partition of the topic (a group's records all live in one: its coordinator's), which
   decodes and walks them in offset order (``broker_log.partition_walk``), streaming;
2. what the walks wrote lands in the lake (``catalog.BROKER_TABLES``): generations, consumer-group
   events, ownership changes (each replacing the rows from the slice's start offsets on), the
   commits kept (merged by record, their reasons joined), the decoder's counts, the topic ids;
3. the log end of each partition an ownership change names, at the times the bounds need (the
   change, the previous owner's release, revocation request and join completion), from the
   cluster's Admin API (``offsets_for_times``), added to ``silver/broker_log_ends``;
4. last, in one commit, each group's new state and each partition's next offset
   (``silver/broker_state``).

Exactly once without a checkpoint: a run killed before step 4 left the state and the offsets of
the slice before it, and its rerun reads the slice again from there, writing the same rows over
the ones it left (step 2 replaces from the start offsets; merges are idempotent). A group is
``(cluster_id, group_id)`` with the cluster's own id (as the agents' DescribeCluster reads it), so
two clusters' groups of one name stay two groups.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lens_runtime.broker_choice import NO_BROKER
from lens_runtime.errors import LensError
from pipelines import catalog, lake
from pipelines.broker.cluster_admin import AUTHORIZATION, ClusterAdmin, kafka_error
from pipelines.broker_log.offsets_topic import OFFSETS_TOPIC, READER_GROUP, refused
from pipelines.broker_log.partition_walk import walk_partition
from pipelines.broker_log.schema_set import SchemaSet, schema_set
from pipelines.catalog import Table, ddl_of
from pipelines.config import PipelineConfig, Progress
from pipelines.group_apply import stream_per_group
from pipelines.ingest import Offsets, capped

CLUSTER = "cluster_id"
MARK_KEY = "rebalance_lens_broker"  # in a state commit's userMetadata: every cluster's next offsets
# What a run counts (its result, as ``pipeline run`` prints it): records read (decoded and skipped),
# the groups whose history went on, the rows written per table, the log ends asked.
COUNTED = ("records", "decoded", "skipped", "groups", "generations", "events", "changes", "commits", "topics",
           "log_ends")
# The walk's outputs and the tables they land in (what ``partition_walk.ROW_KINDS`` names).
HISTORY: dict[str, Table] = {"generations": catalog.BROKER_GENERATIONS, "events": catalog.BROKER_EVENTS,
                             "changes": catalog.BROKER_OWNERSHIP, "commits": catalog.BROKER_COMMITS}
STATE_ROW = "group_id string, offsets_partition int, through_offset bigint, through_ms bigint, state string"
COUNT_ROW = "offsets_partition int, outcome string, record_type int, name string, version int, records bigint"
TOPIC_ROW = "topic_id string, topic string"
INPUT_ROW = ("offsets_partition int, offset bigint, timestamp_ms bigint, key binary, value binary, "
             "group_id string, state string, through_offset bigint, through_ms bigint")
# Spark's Kafka source finds a topic's partitions through the Admin API and leaves internal topics
# out (ConsumerStrategy.retrieveAllPartitions: "Partitions specified for Kafka start offsets don't
# match what are assigned"); its consumer-based offset reader, still in Spark 4.2, assigns them as
# given. Set for the slice's read only.
CONSUMER_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
# The times of an ownership change whose log end the bounds read (docs/broker-source.md).
LOG_END_TIMES = ("at_ms", "released_ms", "revoke_requested_ms", "join_completed_ms")


def _without_cluster(table: Table) -> str:
    return ddl_of(tuple(c for c in table.all_columns() if c[0] != CLUSTER), ": ")


def _struct(ddl: str) -> str:
    """``"a string, b bigint"`` as ``struct<a: string, b: bigint>``."""
    return f"struct<{', '.join(c.strip().replace(' ', ': ', 1) for c in ddl.split(','))}>"


# The walk's output row: one struct per kind (partition_walk.ROW_KINDS), the history's as declared.
WALK_DDL = ", ".join([*(f"{kind} struct<{_without_cluster(t)}>" for kind, t in HISTORY.items()),
                      *(f"{kind} {_struct(ddl)}" for kind, ddl in (("state", STATE_ROW), ("count", COUNT_ROW),
                                                                   ("topic", TOPIC_ROW)))])


@dataclass(frozen=True)
class BrokerCluster:
    """A cluster the stage reads: its bootstrap servers and the Kafka client settings it needs."""

    bootstrap: str
    options: dict[str, str]


def clusters_of(config: PipelineConfig) -> list[BrokerCluster]:
    """``broker_clusters`` (';' between clusters; default: the telemetry cluster, with its
    ``kafka_options``), each with ``broker_kafka_options``' "*" and its own settings."""
    named = [c.strip() for c in config.broker_clusters.split(";") if c.strip()] or [config.bootstrap_servers]
    if not all(named):
        raise LensError(NO_BROKER)
    out = []
    for bootstrap in named:
        own = config.kafka_options if bootstrap == config.bootstrap_servers else {}
        options = {**own, **config.broker_kafka_options.get("*", {}), **config.broker_kafka_options.get(bootstrap, {})}
        out.append(BrokerCluster(bootstrap, {**options, "bootstrap.servers": bootstrap}))
    return out


def next_slice(done: Offsets, earliest: Offsets, bound: Offsets, limit: int | None) -> tuple[Offsets, Offsets]:
    """(start, end) per partition of the next slice: from where the last one stopped (a partition
    never read, or cut below by retention: its earliest offset) to ``bound``, at most ``limit`` records."""
    starts = {p: max(done.get(p, earliest[p]), earliest[p]) for p in earliest}
    ends = {p: max(starts[p], bound[p]) for p in starts}
    return starts, capped(starts, ends, limit)


@dataclass(frozen=True)
class _Run:
    """One cluster's run: what each slice reads with."""

    cluster: BrokerCluster
    cluster_id: str
    admin: ClusterAdmin
    schemas: SchemaSet
    names: dict[str, str]  # topic id -> name
    new_names: dict[str, str]  # those the Admin API named that the lake has not stored: stored by the first slice
    progress: Progress
    refused: set[str]  # data topics whose log ends were refused (said once)
    topic: str  # __consumer_offsets
    marks: dict[str, Offsets]  # per cluster, the next offsets: this one's moved on as its slices land


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """Each cluster's new records of ``__consumer_offsets`` into the broker tables (module docstring)."""
    if config.broker_source != "on":
        progress("broker: off (--broker-source on reads every group's history from __consumer_offsets)")
        return {"clusters": 0}
    counts: Counter = Counter(dict.fromkeys(COUNTED, 0))
    clusters, marks = clusters_of(config), read_marks(spark, config)
    for cluster in clusters:
        counts.update(run_cluster(spark, config, cluster, progress, marks))
    return {"clusters": len(clusters), **counts}


def run_cluster(spark: SparkSession, config: PipelineConfig, cluster: BrokerCluster, progress: Progress,
                marks: dict[str, Offsets], topic: str = OFFSETS_TOPIC) -> Counter:
    """One cluster's new records into the lake, slice by slice, from ``marks`` (``read_marks``: kept
    up to date as slices land); its counts. ``topic``: where the records are (a benchmark's copy of
    a busy offsets topic: no broker lets a client write that one)."""
    counts: Counter = Counter()
    with ClusterAdmin(spark, cluster.options) as admin:
        cluster_id = admin.cluster_id()
        partitions = admin.partitions(topic)
        if not partitions:
            progress(f"broker: cluster {cluster_id} ({cluster.bootstrap}) has no {topic} yet: no group committed")
            return counts
        earliest = admin.offsets(topic, partitions, "earliest")
        bound = admin.offsets(topic, partitions, "latest")
        if config.ingest_until_ms is not None:
            until = admin.offsets(topic, partitions, config.ingest_until_ms)
            bound = {p: min(bound[p], until[p]) for p in bound}
        work = None
        while True:
            starts, ends = next_slice(marks.get(cluster_id, {}), earliest, bound, config.broker_max_records)
            if ends == starts:
                break
            work = work or _Run(cluster, cluster_id, admin, schema_set(),
                                *_topic_names(spark, config, cluster_id, admin), progress, set(), topic, marks)
            started, moving = time.monotonic(), [p for p in ends if ends[p] > starts[p]]
            landed = _slice(spark, config, work, starts, ends)
            progress(f"broker: {cluster_id}: {landed['records']:,} record(s) of {len(moving)} partition(s) landed "
                     f"in {time.monotonic() - started:.1f} s ({sum(bound[p] - ends[p] for p in ends):,} offsets to go)")
            counts.update(landed)
    progress(f"broker: cluster {cluster_id} ({cluster.bootstrap}): {counts['records']:,} record(s) read, "
             f"{counts['changes']:,} ownership change(s), {counts['commits']:,} commit(s) kept, "
             f"{counts['skipped']:,} skipped")
    return counts


def _cluster_is(cluster_id: str) -> str:
    return f"{CLUSTER} = {lake.sql_literal(cluster_id)}"


def _marked(metadata: str | None) -> dict[str, Offsets] | None:
    """The next offsets a state commit's userMetadata carries, per cluster; None for other commits."""
    try:
        found = json.loads(metadata or "")[MARK_KEY]
    except (ValueError, TypeError, KeyError):
        return None
    return {cluster: {int(p): int(o) for p, o in offsets.items()} for cluster, offsets in found.items()}


def read_marks(spark: SparkSession, config: PipelineConfig) -> dict[str, Offsets]:
    """Per cluster and partition of the topic, the next offset to read (none: never read): from the
    state table's newest commit (no Spark job), else from its rows (after a compaction's commit)."""
    if not lake.exists(spark, config.lake_path, catalog.BROKER_STATE):
        return {}
    found = _marked(lake.newest_commit(spark, config.lake_path, catalog.BROKER_STATE)[1].get("userMetadata"))
    if found is not None:
        return found
    marks: dict[str, Offsets] = {}
    for r in (lake.read(spark, config.lake_path, catalog.BROKER_STATE).where(F.col("group_id").isNull())
              .select(CLUSTER, "offsets_partition", "next_offset").collect()):
        marks.setdefault(r[CLUSTER], {})[r.offsets_partition] = r.next_offset
    return marks


def _topic_names(spark: SparkSession, config: PipelineConfig, cluster_id: str,
                 admin: ClusterAdmin) -> tuple[dict[str, str], dict[str, str]]:
    """topic id -> name: those stored and those the cluster has now; and those not stored yet."""
    stored = _stored_topics(spark, config, cluster_id)
    names = {**stored, **admin.topic_ids()}
    return names, {t: n for t, n in names.items() if stored.get(t) != n}


def _stored_topics(spark: SparkSession, config: PipelineConfig, cluster_id: str) -> dict[str, str]:
    if not lake.exists(spark, config.lake_path, catalog.BROKER_TOPICS):
        return {}
    rows = lake.read(spark, config.lake_path, catalog.BROKER_TOPICS).where(F.expr(_cluster_is(cluster_id))).collect()
    return {r.topic_id: r.topic for r in rows}


def _records(spark: SparkSession, work: _Run, starts: Offsets, ends: Offsets, moving: list[int]) -> DataFrame:
    """The slice's records, read committed, as the walk's input rows."""
    def by_partition(offsets: Offsets) -> str:
        return json.dumps({work.topic: {str(p): offsets[p] for p in moving}})

    reader = (spark.read.format("kafka").option("assign", json.dumps({work.topic: moving}))
              .option("startingOffsets", by_partition(starts)).option("endingOffsets", by_partition(ends))
              .option("failOnDataLoss", "false")  # a compacted topic has gaps: not a loss
              .option("groupIdPrefix", READER_GROUP))  # a group id per read (offsets_topic.READER_GROUP says why)
    settings = {**work.cluster.options, "isolation.level": "read_committed"}
    settings.pop("group.id", None)
    for key, value in settings.items():
        reader = reader.option(f"kafka.{key}", value)
    return reader.load().select(
        F.col("partition").alias("offsets_partition"), "offset", F.unix_millis("timestamp").alias("timestamp_ms"),
        "key", "value", F.lit(None).cast("string").alias("group_id"), F.lit(None).cast("string").alias("state"),
        F.lit(None).cast("bigint").alias("through_offset"), F.lit(None).cast("bigint").alias("through_ms"))


def _states(spark: SparkSession, config: PipelineConfig, cluster_id: str, moving: list[int]) -> DataFrame:
    """The stored state of each group of the ``moving`` partitions, as the walk's input rows."""
    if not lake.exists(spark, config.lake_path, catalog.BROKER_STATE):
        return spark.createDataFrame([], INPUT_ROW)
    return (lake.declared(lake.read(spark, config.lake_path, catalog.BROKER_STATE), catalog.BROKER_STATE)
            .where(F.expr(_cluster_is(cluster_id)) & F.col("group_id").isNotNull()
                   & F.col("offsets_partition").isin(moving))
            .select("offsets_partition", F.lit(None).cast("bigint").alias("offset"),
                    F.lit(None).cast("bigint").alias("timestamp_ms"), F.lit(None).cast("binary").alias("key"),
                    F.lit(None).cast("binary").alias("value"), "group_id", "state", "through_offset", "through_ms"))


def spill_path(config: PipelineConfig) -> str:
    """Where a slice's walked rows are spilled while it lands (deleted after it)."""
    return f"{config.checkpoint_path}/broker_rows"


def _slice(spark: SparkSession, config: PipelineConfig, work: _Run, starts: Offsets, ends: Offsets) -> Counter:
    """One slice read, walked and landed (the module docstring's steps 1-4); its counts."""
    moving = sorted(p for p in ends if ends[p] > starts[p])
    rows = _records(spark, work, starts, ends, moving).unionByName(
        _states(spark, config, work.cluster_id, moving))
    walked = stream_per_group(rows, "offsets_partition", partial(walk_partition, work.schemas, work.names),
                              WALK_DDL, order=["offset"])
    spark.conf.set(CONSUMER_OFFSET_FETCHING, "true")
    try:
        with lake.spilled(spark, walked, spill_path(config)) as out:
            spark.conf.unset(CONSUMER_OFFSET_FETCHING)
            counts = _counts(out)
            landings = [*_history_landings(spark, config, work.cluster_id, out, counts, starts, moving),
                        partial(_write_audit, spark, config, work.cluster_id, out, counts, starts, ends, moving,
                                work.new_names),
                        partial(_write_log_ends, spark, config, work, out)]
            landed = lake.land_together(landings)
            counts["log_ends"] = landed[-1]
            work.new_names.clear()  # stored
            marks = {**work.marks, work.cluster_id: {**work.marks.get(work.cluster_id, {}),
                                                     **{p: ends[p] for p in moving}}}
            write_state(spark, config, work.cluster_id, out, ends, moving, json.dumps({MARK_KEY: marks}))
            work.marks.update(marks)
    except Exception as err:  # Spark's read refused (no READ, where DESCRIBE was granted)
        name = kafka_error(err)
        if name is not None and name.endswith(AUTHORIZATION):
            raise LensError(refused(name)) from None
        raise
    finally:
        spark.conf.unset(CONSUMER_OFFSET_FETCHING)
    return counts


def _counts(out: DataFrame) -> Counter:
    """What a slice read and wrote: records, skipped, and rows per output."""
    outcome = F.col("count.outcome")
    found = out.agg(*[F.count(kind).alias(kind) for kind in (*HISTORY, "state", "topic")],
                    F.sum(F.when(outcome == "decoded", F.col("count.records"))).alias("decoded"),
                    F.sum(F.when(outcome.isin("unknown_type", "unknown_version", "malformed"),
                                 F.col("count.records"))).alias("skipped")).first().asDict()
    counts = Counter({k: int(v or 0) for k, v in found.items()})
    counts["records"] = counts["decoded"] + counts["skipped"]
    counts["groups"], counts["topics"] = counts.pop("state"), counts.pop("topic")
    return counts


def _in_slice(cluster_id: str, starts: Offsets, moving: list[int], column: str = "offset") -> str:
    """The rows a slice writes over: its cluster's, from each partition's start offset on."""
    ranges = " OR ".join(f"(offsets_partition = {p} AND {column} >= {starts[p]})" for p in moving)
    return f"{_cluster_is(cluster_id)} AND ({ranges})"


def _with_cluster(rows: DataFrame, cluster_id: str, table: Table) -> DataFrame:
    return rows.withColumn(CLUSTER, F.lit(cluster_id)).select(*table.column_names())


def _replace(spark: SparkSession, config: PipelineConfig, table: Table, rows: DataFrame, predicate: str,
             count: int) -> None:
    """The table's rows matching ``predicate`` replaced by ``rows`` (``count`` of them): when there
    are none, a look for rows a killed run left (a delete only if there are), not a write."""
    if count or not lake.exists(spark, config.lake_path, table):
        lake.replace_where(spark, config.lake_path, table, rows, predicate)
    else:
        lake.delete_rows(spark, config.lake_path, table, F.expr(predicate))


def _history_landings(spark: SparkSession, config: PipelineConfig, cluster_id: str, out: DataFrame,
                      counts: Counter, starts: Offsets, moving: list[int]) -> list[Callable[[], None]]:
    """The writes of the walks' generations, events and ownership changes (replacing the slice's)
    and of the commits kept: independent tables, landed side by side."""
    def replaced(kind: str) -> None:
        rows = _with_cluster(out.where(F.col(kind).isNotNull()).select(f"{kind}.*"), cluster_id, HISTORY[kind])
        _replace(spark, config, HISTORY[kind], rows, _in_slice(cluster_id, starts, moving), counts[kind])

    landings: list[Callable[[], None]] = [partial(replaced, kind) for kind in ("generations", "events", "changes")]
    if counts["commits"]:
        landings.append(partial(_write_commits, spark, config, cluster_id, out))
    return landings


def _write_commits(spark: SparkSession, config: PipelineConfig, cluster_id: str, out: DataFrame) -> None:
    """The commits kept, merged: a commit kept again gets its new reasons."""
    commits = out.where(F.col("commits").isNotNull()).select("commits.*")
    others = [c for c in commits.columns if c not in ("offsets_partition", "offset", "reasons")]
    commits = (commits.groupBy("offsets_partition", "offset")
               .agg(*[F.first(c).alias(c) for c in others],
                    F.array_sort(F.array_distinct(F.flatten(F.collect_list("reasons")))).alias("reasons")))
    lake.insert_new(spark, config.lake_path, catalog.BROKER_COMMITS,
                    _with_cluster(commits, cluster_id, catalog.BROKER_COMMITS),
                    update={"reasons": "array_sort(array_distinct(concat(t.reasons, s.reasons)))"})


def _write_audit(spark: SparkSession, config: PipelineConfig, cluster_id: str, out: DataFrame, counts: Counter,
                 starts: Offsets, ends: Offsets, moving: list[int], new_names: dict[str, str]) -> None:
    """The decoder's counts of the slice (replacing a killed run's) and the topic ids ``new_names``
    and its records named."""
    place = F.create_map(*[F.lit(x) for p in moving for x in (p, starts[p])])
    until = F.create_map(*[F.lit(x) for p in moving for x in (p, ends[p])])
    outcomes = (out.where(F.col("count").isNotNull()).select("count.*")
                .withColumn("from_offset", F.element_at(place, F.col("offsets_partition")).cast("bigint"))
                .withColumn("to_offset", F.element_at(until, F.col("offsets_partition")).cast("bigint")))
    lake.replace_where(spark, config.lake_path, catalog.BROKER_DECODED,
                       _with_cluster(outcomes, cluster_id, catalog.BROKER_DECODED),
                       _in_slice(cluster_id, starts, moving, "from_offset"))
    named = out.where(F.col("topic").isNotNull()).select("topic.*")
    if new_names:
        named = spark.createDataFrame(sorted(new_names.items()), TOPIC_ROW).unionByName(named)
    if new_names or counts["topics"]:  # an id names one topic for good (a topic created again gets a new one)
        lake.insert_new(spark, config.lake_path, catalog.BROKER_TOPICS,
                        _with_cluster(named.dropDuplicates(["topic_id"]), cluster_id, catalog.BROKER_TOPICS))


def _write_log_ends(spark: SparkSession, config: PipelineConfig, work: _Run, out: DataFrame) -> int:
    """The log end of each partition an ownership change of the slice names, at its times
    (``LOG_END_TIMES``) and its log start (``catalog.LOG_START_MS``: where a new owner without a commit
    starts); those already stored (a killed run's too) are not asked again. The rows added."""
    changes = out.where(F.col("changes.topic").isNotNull()).select("changes.*")
    times = changes.select("topic", "partition", F.explode(F.array(*LOG_END_TIMES, F.lit(catalog.LOG_START_MS)))
                           .alias("at_ms"))
    wanted = {(r.topic, r.partition, r.at_ms) for r in times.where(F.col("at_ms").isNotNull()).distinct().collect()}
    if lake.exists(spark, config.lake_path, catalog.BROKER_LOG_ENDS) and wanted:
        stored = (lake.read(spark, config.lake_path, catalog.BROKER_LOG_ENDS)
                  .where(F.expr(_cluster_is(work.cluster_id)) & F.col("topic").isin(sorted({w[0] for w in wanted})))
                  .select("topic", "partition", "at_ms").collect())
        wanted -= {tuple(r) for r in stored}
    asked_ms = int(time.time() * 1000)
    found = work.admin.log_ends_at(wanted)
    rows = [(work.cluster_id, t, p, at, offset, was_found, asked_ms)
            for (t, p, at), (offset, was_found) in sorted(found.offsets.items())]
    if found.refused - work.refused:
        work.progress(f"broker: no log ends of {', '.join(sorted(found.refused - work.refused))}: the bounds need "
                      "DESCRIBE on those topics (kafka-acls --add --allow-principal User:<you> --operation Describe "
                      "--topic <topic>)")
        work.refused.update(found.refused)
    if rows or not lake.exists(spark, config.lake_path, catalog.BROKER_LOG_ENDS):
        # appended, not merged: those stored were not asked again, and one run writes the lake at a time
        lake.append(spark, config.lake_path, catalog.BROKER_LOG_ENDS,
                    spark.createDataFrame(rows, catalog.BROKER_LOG_ENDS.ddl()))
    return len(rows)


def write_state(spark: SparkSession, config: PipelineConfig, cluster_id: str, out: DataFrame, ends: Offsets,
                 moving: list[int], mark: str) -> None:
    """Last, in one commit: the groups' states and the partitions' next offsets (rows, and every
    cluster's in the commit's ``mark``)."""
    states = (out.where(F.col("state").isNotNull()).select("state.*")
              .withColumn("next_offset", F.lit(None).cast("bigint")))
    marks = spark.createDataFrame([(None, p, None, None, ends[p], None) for p in moving],
                                  "group_id string, offsets_partition int, through_offset bigint, through_ms bigint, "
                                  "next_offset bigint, state string")
    rows = _with_cluster(states.unionByName(marks), cluster_id, catalog.BROKER_STATE)
    lake.replace_where(spark, config.lake_path, catalog.BROKER_STATE, rows,
                       f"{_cluster_is(cluster_id)} AND offsets_partition IN ({', '.join(map(str, moving))})", mark)
