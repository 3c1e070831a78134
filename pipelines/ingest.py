"""Bronze: the telemetry topic landed in Delta as raw values plus Kafka metadata.

A run lands, per partition, the records from where the last run stopped up to the end of the
log, or, with ``config.ingest_until_ms``, up to the first record whose Kafka timestamp is at or
after it (Kafka's own offset-for-time lookup). A scheduler passes its run's data interval end,
so runs keyed by consecutive intervals land consecutive slices of the topic: backfilling hour
h1 then h2 lands what one run through h2 lands, and rerunning h1 afterwards lands nothing. The
start is where the last run stopped, not the interval's start, so a record that arrived late
for an earlier hour (or stamped before a later-stamped record of its partition) lands with the
next run instead of being skipped.

Why not Structured Streaming, as this stage was until the DAGs: its Kafka source cannot end
a run at given offsets (``endingOffsets`` is for batch reads only), so every run took
everything there was.

Exactly once without a checkpoint: the offsets a run landed through go into the same Delta
commit as its rows (the commit's ``userMetadata``), so the lake never holds rows without their
offsets or offsets without their rows, and the next run starts from the newest such commit; a
run killed before its commit left nothing, and its rerun plans again. The commit also carries
a Delta transaction id (``txnAppId``; ``txnVersion`` = the table version the run planned from,
plus one): two runs planned from the same version (two schedulers, a retry racing the
original) land once, Delta skipping the second write. A bronze table whose history no longer
has such a commit (older than Delta's log retention, or landed by the streaming ingest of
earlier versions) continues after the largest offset it holds per partition.
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lens_runtime.broker_choice import NO_BROKER
from lens_runtime.errors import LensError
from pipelines import catalog, cluster, lake
from pipelines.config import PipelineConfig, Progress

Offsets = dict[int, int]  # partition -> offset
TXN_APP_ID = "rebalance-lens-ingest"
MARK_KEY = "rebalance_lens_ingest"  # in a bronze commit's userMetadata: the offsets it landed through
RECENT_COMMITS = 25  # where the last ingest commit is looked for before the whole history is read


def check_topic(config: PipelineConfig) -> int:
    """The topic's partition count; a clear error when the broker or the topic is missing."""
    from confluent_kafka import KafkaException

    if not config.bootstrap_servers:
        raise LensError(NO_BROKER)
    try:
        metadata = cluster.admin(config).list_topics(timeout=15)  # all topics: asking for one would auto-create it
    except KafkaException as err:
        raise LensError(f"cannot reach Kafka at {config.bootstrap_servers} ({err}): start it with "
                        "`rebalance-lens kafka up` or pass the right --bootstrap") from err
    topic = metadata.topics.get(config.topic)
    if topic is None or topic.error is not None:
        raise LensError(f"topic {config.topic!r} does not exist on {config.bootstrap_servers}: start the agent "
                        "(it creates it on first send) or pass --topic with the telemetry topic")
    return len(topic.partitions)


@dataclass(frozen=True)
class Landed:
    """What bronze holds: its version when read (-1: no table yet) and, per topic, the next
    offset to land of each partition."""

    version: int = -1
    next_offsets: dict[str, Offsets] = field(default_factory=dict)


@dataclass(frozen=True)
class LogOffsets:
    """The topic's offsets a run is planned against, read once per run."""

    earliest: Offsets
    latest: Offsets
    bound: Offsets  # the first offset at or after ingest_until_ms (the latest without one)
    first: Offsets  # where a topic never landed starts: since_ms's offset, else the earliest


def landed_through(metadata: str | None) -> dict[str, Offsets] | None:
    """The offsets an ingest commit's userMetadata says it landed through; None for other commits."""
    try:
        found = json.loads(metadata or "")[MARK_KEY]["next_offsets"]
    except (ValueError, TypeError, KeyError):
        return None
    return {topic: {int(p): int(o) for p, o in offsets.items()} for topic, offsets in found.items()}


def landed(spark: SparkSession, config: PipelineConfig) -> Landed:
    """Bronze's version and the offsets its newest ingest commit landed through."""
    from delta.tables import DeltaTable

    if not lake.exists(spark, config.lake_path, catalog.BRONZE):
        return Landed()
    newest, info = lake.newest_commit(spark, config.lake_path, catalog.BRONZE)
    mark = landed_through(info.get("userMetadata"))
    if mark is not None:  # the usual case, read from the log file: no Spark job
        return Landed(newest, mark)
    table = DeltaTable.forPath(spark, catalog.BRONZE.location(config.lake_path))
    for limit in (RECENT_COMMITS, None):
        commits = (table.history(limit) if limit else table.history()).select("version", "userMetadata").collect()
        for commit in commits:  # newest first
            mark = landed_through(commit.userMetadata)
            if mark is not None:
                return Landed(commits[0].version, mark)
        if limit and len(commits) < limit:
            break  # that was the whole history
    return Landed(commits[0].version, _scanned(spark, config))


def _scanned(spark: SparkSession, config: PipelineConfig) -> dict[str, Offsets]:
    """Per topic and partition, the offset after the largest one bronze holds."""
    found = (lake.read(spark, config.lake_path, catalog.BRONZE).groupBy("topic", "kafka_partition")
             .agg(F.max("kafka_offset").alias("last")).collect())
    out: dict[str, Offsets] = {}
    for row in found:
        out.setdefault(row.topic, {})[row.kafka_partition] = row.last + 1
    return out


def _offsets_for(config: PipelineConfig, partitions: int, spec) -> Offsets:
    from confluent_kafka import TopicPartition

    admin = cluster.admin(config)  # held until the answers are in: a collected client never completes its futures
    futures = admin.list_offsets({TopicPartition(config.topic, p): spec for p in range(partitions)},
                                 request_timeout=15)
    return {tp.partition: future.result(timeout=30).offset for tp, future in futures.items()}


def log_offsets(config: PipelineConfig, partitions: int) -> LogOffsets:
    """The topic's earliest and latest offsets, and where this run ends and a new topic starts.
    An offset-for-time of -1 means no record is that late: the latest offset."""
    from confluent_kafka.admin import OffsetSpec

    earliest = _offsets_for(config, partitions, OffsetSpec.earliest())
    latest = _offsets_for(config, partitions, OffsetSpec.latest())

    def at(ms: int | None, otherwise: Offsets) -> Offsets:
        if ms is None:
            return otherwise
        found = _offsets_for(config, partitions, OffsetSpec.for_timestamp(ms))
        return {p: latest[p] if offset < 0 else offset for p, offset in found.items()}

    return LogOffsets(earliest, latest, at(config.ingest_until_ms, latest), at(config.since_ms, earliest))


def next_range(config: PipelineConfig, log: LogOffsets, state: Landed) -> tuple[Offsets, Offsets]:
    """(start, end) per partition of the next commit: from where bronze stopped to the run's
    bound, at most ``max_offsets_per_trigger`` records (shared among the partitions behind)."""
    known = state.next_offsets.get(config.topic)
    starts = {}
    for p, earliest in log.earliest.items():
        start = (known or {}).get(p, log.first[p] if known is None else earliest)
        if start > log.latest[p]:
            start = earliest  # the log is shorter than what landed: the topic was recreated
        starts[p] = max(start, earliest)  # records before the earliest were deleted by retention
    ends = {p: max(starts[p], log.bound[p]) for p in starts}
    return starts, capped(starts, ends, config.max_offsets_per_trigger)


def capped(starts: Offsets, ends: Offsets, limit: int | None) -> Offsets:
    """``ends`` moved in so that [starts, ends) holds at most ``limit`` records (None: no limit),
    shared among the partitions behind."""
    behind = [p for p in starts if ends[p] > starts[p]]
    if not limit or not behind:
        return ends
    share = max(1, limit // len(behind))
    return {p: min(end, starts[p] + share) for p, end in ends.items()}


def land(spark: SparkSession, config: PipelineConfig, state: Landed, starts: Offsets, ends: Offsets) -> int:
    """Append the records of [starts, ends) with the offsets they reach, in one commit; the rows
    it added (0 when Delta skipped it: a run planned from the same version landed them)."""
    moving = sorted(p for p in ends if ends[p] > starts[p])

    def by_partition(offsets: Mapping[int, int]) -> str:
        return json.dumps({config.topic: {str(p): offsets[p] for p in moving}})

    reader = (spark.read.format("kafka")
              .option("kafka.bootstrap.servers", config.bootstrap_servers)
              .option("assign", json.dumps({config.topic: moving}))
              .option("startingOffsets", by_partition(starts))
              .option("endingOffsets", by_partition(ends))
              .option("failOnDataLoss", "false"))
    for key, value in config.kafka_options.items():
        reader = reader.option(f"kafka.{key}", value)
    raw = reader.load().select(
        F.col("topic"), F.col("partition").alias("kafka_partition"), F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"), F.col("key").cast("string").alias("key"), F.col("value"),
        F.to_date("timestamp").alias("date"))
    reached = {**state.next_offsets, config.topic: {**state.next_offsets.get(config.topic, {}),
                                                    **{p: ends[p] for p in moving}}}
    # the write's own id: a racer's commit with the same offsets is not counted as this one's
    mark = json.dumps({MARK_KEY: {"next_offsets": reached, "until_ms": config.ingest_until_ms,
                                  "write": uuid.uuid4().hex}}, sort_keys=True)
    (raw.write.format("delta").mode("append").partitionBy(*catalog.BRONZE.partition_by)
     .option("txnAppId", TXN_APP_ID).option("txnVersion", str(state.version + 1))
     .option("userMetadata", mark)
     .save(catalog.BRONZE.location(config.lake_path)))
    return _rows_of_commit(spark, config, state.version, mark)


def _rows_of_commit(spark: SparkSession, config: PipelineConfig, after: int, mark: str) -> int:
    from delta.tables import DeltaTable

    commits = DeltaTable.forPath(spark, catalog.BRONZE.location(config.lake_path)).history(RECENT_COMMITS)
    ours = commits.where((F.col("version") > after) & (F.col("userMetadata") == mark)).collect()
    return int(ours[0].operationMetrics.get("numOutputRows", 0)) if ours else 0


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """Land the topic's records from where bronze stopped to the run's bound (see the module
    docstring); ``config.since_ms`` sets where a first run starts."""
    log = log_offsets(config, check_topic(config))
    rows = 0
    while True:
        state = landed(spark, config)
        starts, ends = next_range(config, log, state)
        if ends == starts:
            break
        rows += land(spark, config, state, starts, ends)
    until = "" if config.ingest_until_ms is None else \
        f" stamped before {datetime.fromtimestamp(config.ingest_until_ms / 1000, timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
    progress(f"ingest: {rows} new record(s){until} from {config.topic}")
    return {"rows": rows}
