"""The broker stage on a busy offsets topic: records/s beside the commit rate it must keep up with,
and the rows it keeps per ownership change.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_throughput.py [--groups 1000] [--minutes 60] \
        [--agent-events 1000000]

A busy cluster's ``__consumer_offsets``, made on an embedded broker: ``--groups`` classic groups
(range, 4 partitions) each committing every partition every second for ``--minutes``, and every
tenth group rebalancing every ten minutes (a second member joins, and leaves five minutes later:
eager rounds, every partition handed off). The records are Kafka's own format: the commits'
``OffsetCommit`` v3 keys and values are written here (checked by the decoder before a run), each
group's ``GroupMetadata`` values are those a real range group wrote on the same broker (captured
first, its group id changed in the key). They go to an ordinary topic of 50 partitions, each
group's in its coordinator's (Java's ``String.hashCode``, as Kafka places it; no broker lets a
client write ``__consumer_offsets`` itself), which the stage reads with its own code
(``stage.run_cluster(..., topic=...)``), in one slice, on a fresh lake.

Beside it, the agent's path on the same cores in the same run: ``--agent-events`` synthetic
telemetry events (``pipeline_throughput``'s fleet of small groups) from their topic into bronze and
validated silver (ingest, then validate: the agent path's read, parse and land, as the broker
stage's is read, decode, walk and land), its events/s beside the rate the same busy cluster's agents
would send (at least one commit event per group a second; their progress events come on top).

Prints the records, the seconds the stage took, records/s and commits/s (one group's commit of
its 4 partitions is one commit) beside the rate the topic was written at (``--groups`` commits a
second) and the ratio; the ownership changes and the commits kept per change, the most any one
change kept (each kept commit counted for the change it was kept for: ``commit_window.KEPT_BEFORE``
the next one, ``KEPT_AFTER`` the one before) beside the design's bound (``KEPT_PER_CHANGE``,
whatever the commit rate); then the agent path's events, seconds and events/s.
"""
from __future__ import annotations

import argparse
import shutil
import struct
import tempfile
import time
import uuid
from pathlib import Path

from pipeline_throughput import EVENTS_PER_GROUP, ROUNDS, create_topic, produce, send, timed_stage

PARTITIONS = 4  # the captured range group's (tests.support.offsets_capture)
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions' default
ISSUE_GROUPS = 1000  # issue 52's busy cluster: 1,000 groups committing every second (target: keep up with 10x)
REBALANCE_EVERY_GROUPS = 10
REBALANCE_EVERY_S = 600


def java_hash(text: str) -> int:
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group: str) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % partitions``."""
    return (java_hash(group) & 0x7FFFFFFF) % OFFSETS_PARTITIONS


def _string16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def commit_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + _string16(group) + _string16(topic) + struct.pack(">i", partition)


def commit_value(offset: int, at_ms: int) -> bytes:
    """OffsetCommitValue v3: offset, leaderEpoch, metadata, commitTimestamp."""
    return struct.pack(">hqi", 3, offset, -1) + _string16("") + struct.pack(">q", at_ms)


def group_key(group: str) -> bytes:
    return struct.pack(">h", 2) + _string16(group)


def captured_generations(kafka) -> tuple[str, list[bytes]]:
    """A real range group's GroupMetadata values (a alone, a and b, a alone, empty) and its topic."""
    from pipelines.broker_log.records import RecordDecoder
    from pipelines.broker_log.schema_set import schema_set
    from tests.support.offsets_capture import capture_offsets

    capture = capture_offsets(kafka, uuid.uuid4().hex[:6])
    decoder, group = RecordDecoder(schema_set()), capture.groups["eager"]
    values = [r.value for r in sorted(capture.records, key=lambda r: r.offset)
              if r.value is not None and decoder.decode(r.key, r.value).name == "GroupMetadata"
              and decoder.decode(r.key, r.value).key["group"] == group]
    return capture.topic, values[1:4]  # generations 1-3 (the first record is the empty group)


def busy_records(groups: int, minutes: int, topic: str, generations: list[bytes], start_ms: int):
    """(key, value, timestamp, partition) of the busy topic, in time order."""
    for second in range(minutes * 60):
        at = start_ms + second * 1000
        for g in range(groups):
            group = f"busy-{g:05d}"
            place = coordinator_partition(group)
            if g % REBALANCE_EVERY_GROUPS == 0:
                phase = (second + g) % REBALANCE_EVERY_S
                if second == 0 or phase in (0, REBALANCE_EVERY_S // 2):
                    which = 0 if second == 0 else 1 if phase == 0 else 2
                    yield group_key(group), generations[which], at, place
            for p in range(PARTITIONS):
                yield commit_key(group, topic, p), commit_value(second * 10 + p, at), at, place


def _check_encoding(topic: str) -> None:
    from pipelines.broker_log.records import RecordDecoder
    from pipelines.broker_log.schema_set import schema_set

    record = RecordDecoder(schema_set()).decode(commit_key("g", topic, 3), commit_value(42, 1000))
    assert (record.name, record.key["partition"], record.value["offset"], record.value["commitTimestamp"]) == (
        "OffsetCommit", 3, 42, 1000), record


def kept_per_change(spark, lake_path: str) -> int:
    """The most commits kept for one ownership change: each kept commit counted for the change
    after it (``KEPT_BEFORE``) and the one before it (``KEPT_AFTER``) of its group's partition."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from pipelines import catalog, lake
    from pipelines.broker_log.commit_window import KEPT_AFTER, KEPT_BEFORE

    place = ["cluster_id", "group_id", "topic", "partition"]
    changes = (lake.read(spark, lake_path, catalog.BROKER_OWNERSHIP).select(*place, "offsets_partition", "offset")
               .distinct().withColumn("change", F.struct("offsets_partition", "offset")))
    commits = (lake.read(spark, lake_path, catalog.BROKER_COMMITS)
               .select(*place, "offsets_partition", "offset", "reasons"))
    log = Window.partitionBy(*place).orderBy("offsets_partition", "offset")
    walked = (changes.unionByName(commits, allowMissingColumns=True)
              .withColumn("next", F.first("change", ignorenulls=True).over(
                  log.rowsBetween(1, Window.unboundedFollowing)))
              .withColumn("previous", F.last("change", ignorenulls=True).over(
                  log.rowsBetween(Window.unboundedPreceding, -1)))
              .where(F.col("reasons").isNotNull()))
    kept_for = walked.select(*place, "offset", F.explode(F.array_compact(F.array(
        F.when(F.arrays_overlap("reasons", F.array(*map(F.lit, KEPT_BEFORE))), F.col("next")),
        F.when(F.arrays_overlap("reasons", F.array(*map(F.lit, KEPT_AFTER))), F.col("previous"))))).alias("change"))
    return kept_for.groupBy(*place, "change").count().agg(F.max("count")).first()[0] or 0


def agent_path(spark, bootstrap: str, work: Path, events: int) -> tuple[int, float]:
    """The agent's path on ``events`` synthetic telemetry events: ingest and validate on a fresh
    lake; the events and the seconds."""
    from pipelines.config import PipelineConfig

    topic = create_topic(bootstrap)
    n = produce(bootstrap, topic, max(1, events // (EVENTS_PER_GROUP * ROUNDS)), "agent", seed=1)
    config = PipelineConfig(bootstrap_servers=bootstrap, lake_path=str(work / "agent-lake"), topic=topic)
    return n, sum(timed_stage(spark, config, stage)[0] for stage in ("ingest", "validate"))


def broker_stage(spark, bootstrap: str, work: Path, busy: str) -> tuple[dict[str, int], float, int, int]:
    """The stage over the busy topic on a fresh lake: its counts, seconds, the commits it kept and
    the most kept for one change."""
    from pipelines import catalog, lake
    from pipelines.broker import stage
    from pipelines.config import PipelineConfig

    config = PipelineConfig(bootstrap_servers=bootstrap, lake_path=str(work / "lake"), broker_source="on")
    cluster = stage.clusters_of(config)[0]
    started = time.monotonic()
    counts = stage.run_cluster(spark, config, cluster, print, {}, topic=busy)
    took = time.monotonic() - started
    kept = lake.read(spark, config.lake_path, catalog.BROKER_COMMITS).count()
    return counts, took, kept, kept_per_change(spark, config.lake_path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--agent-events", type=int, default=1_000_000)
    args = parser.parse_args()
    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_runtime.spark_session import SparkSettings, build_spark
    from pipelines.broker_log.commit_window import KEPT_PER_CHANGE
    from tests.support.kafka_cluster import KafkaCluster

    work = Path(tempfile.mkdtemp(prefix="lens-broker-bench-"))
    with EmbeddedKafka(heap="1g") as broker:
        kafka = KafkaCluster(broker.bootstrap_servers, broker=broker)
        topic, generations = captured_generations(kafka)
        _check_encoding(topic)
        busy = kafka.create_topic("busy-offsets", partitions=OFFSETS_PARTITIONS)
        started = time.monotonic()
        start_ms = int(time.time() * 1000) - args.minutes * 60_000
        written = send(broker.bootstrap_servers, busy, busy_records(args.groups, args.minutes, topic, generations,
                                                                    start_ms))
        print(f"written: {written:,} records ({args.groups:,} groups x {args.minutes} min) in "
              f"{time.monotonic() - started:.0f} s", flush=True)
        spark = build_spark(SparkSettings(master="local[2]", lake=str(work), log_level="WARN",
                                          app_name="broker-throughput"))
        try:
            counts, took, kept, most = broker_stage(spark, broker.bootstrap_servers, work, busy)
            events, agent_took = agent_path(spark, broker.bootstrap_servers, work, args.agent_events)
        finally:
            spark.stop()
            shutil.rmtree(work, ignore_errors=True)
    commits = counts["records"] / PARTITIONS
    rate = args.groups  # commits a second the busy cluster wrote
    figures = [("records read", f"{counts['records']:,}"), ("seconds (2 cores, one slice)", f"{took:.1f}"),
               ("records/s", f"{counts['records'] / took:,.0f}"), ("commits/s", f"{commits / took:,.0f}"),
               ("commits/s the topic had", f"{rate:,}"),
               ("keeps up with (x that rate)", f"{commits / took / rate:.1f}"),
               ("x 1,000 groups' commits/s", f"{commits / took / ISSUE_GROUPS:.1f}"),
               ("ownership changes", f"{counts['changes']:,}"), ("commits kept", f"{kept:,}"),
               ("commits kept per change", f"{kept / max(1, counts['changes']):.2f}"),
               ("most kept for one change", f"{most:,}"), ("design bound per change", f"{KEPT_PER_CHANGE:,}"),
               ("agent path: events", f"{events:,}"), ("agent path: seconds", f"{agent_took:.1f}"),
               ("agent path: events/s", f"{events / agent_took:,.0f}"),
               ("x its agents' commit events/s", f"{events / agent_took / rate:.1f}")]
    print("\n" + "\n".join(f"{name:<32}{value:>14}" for name, value in figures))


if __name__ == "__main__":
    main()
