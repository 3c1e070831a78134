"""Pipeline throughput on synthetic telemetry: events/s/core per stage, incremental vs full, vs the floor.

    .venv/bin/python benchmarks/pipeline_throughput.py --events 1000000 [--events 10000000] [--keep]

For each size: start the embedded broker, produce the synthetic fleet's telemetry
(lens_scenarios.synthetic.fleet_telemetry: graceful eager rebalances, some skipped commits, a
member restarted every 5 rounds),
then on a fresh lake:

1. the floors: bare Spark batch jobs that read the same topic, parse the JSON and
   write Parquet: the envelope only, and the whole event typed (what the pipeline must
   parse: the least any pipeline on this stack must do);
2. the full pipeline, stage by stage (ingest, validate, silver, gold, recommend, sql), timed, with the
   peak RSS of the driver JVM and of the Python driver sampled every 0.2 s, and the
   driver heap ceiling, peak in use, peak live after GC and GC time from the JVM's MXBeans;
3. 1% more events and an incremental run, twice: new groups, then 1% of the groups
   going on (their whole history is recomputed: the incremental unit is the group).

Prints events/s/core per stage, pipeline/floor and incremental/full time ratios.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psutil

EVENTS_PER_GROUP = 3 * 12 + 2 * 4  # per round: 12 partitions x (fetch, progress, commit) + 4 members x (assign, revoke)
ROUNDS = 20
RESTART_EVERY = 5  # each group restarts a member every 5 rounds: churn for the recommend stage's replays


class PeakMemory:
    """Memory while the block runs: the driver JVM's heap ceiling (-Xmx, i.e.
    spark.driver.memory, default 1g; in local mode the executors live in this JVM too),
    its heap in use (sampled every 0.2 s), its live heap after each collection (what the
    job really holds: the in-use figure also counts garbage not collected yet), GC time,
    and the peak RSS of the JVM and of this Python process."""

    def __init__(self, spark) -> None:
        self._jvm = spark.sparkContext._jvm
        factory = self._jvm.java.lang.management.ManagementFactory
        self._heap_pools = {str(p.getName()) for p in factory.getMemoryPoolMXBeans()
                            if str(p.getType()) == "Heap memory"}
        self._collectors = list(factory.getGarbageCollectorMXBeans())
        self._runtime = self._jvm.java.lang.Runtime.getRuntime()

    def _gc_ms(self) -> int:
        return sum(c.getCollectionTime() for c in self._collectors)

    def __enter__(self) -> "PeakMemory":
        self.python = self.jvm = self.heap_used = self.heap_live = 0
        self._start_gc_ms = self._gc_ms()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _live_after_last_gc(self) -> int:
        live = 0
        for collector in self._collectors:
            info = collector.getLastGcInfo()  # com.sun.management.GarbageCollectorMXBean, on HotSpot
            if info is not None:
                after = info.getMemoryUsageAfterGc()
                live = max(live, sum(after[name].getUsed() for name in after.keySet() if name in self._heap_pools))
        return live

    @staticmethod
    def _rss_of_jvm(child: psutil.Process) -> int:
        """A child's RSS if it is a JVM; 0 for others and for children that exited while we
        looked (Python workers come and go: an unchecked exit killed this sampler once)."""
        try:
            return child.memory_info().rss if "java" in child.name() else 0
        except psutil.NoSuchProcess:
            return 0

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            self.python = max(self.python, me.memory_info().rss)
            self.jvm = max(self.jvm, sum(self._rss_of_jvm(c) for c in me.children(recursive=True)))
            self.heap_used = max(self.heap_used, self._runtime.totalMemory() - self._runtime.freeMemory())
            self.heap_live = max(self.heap_live, self._live_after_last_gc())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.heap_max = self._runtime.maxMemory()
        self.gc_s = (self._gc_ms() - self._start_gc_ms) / 1000.0

    def __str__(self) -> str:
        mib = 2**20
        return (f"driver heap: ceiling {self.heap_max / mib:,.0f} MiB, in use <= {self.heap_used / mib:,.0f}, "
                f"live after GC <= {self.heap_live / mib:,.0f} (GC {self.gc_s:.1f} s); "
                f"JVM RSS {self.jvm / mib:,.0f} MiB, Python {self.python / mib:,.0f} MiB")


def create_topic(bootstrap: str, topic: str = "rebalance-lens-telemetry") -> str:
    """The benchmark's telemetry topic (4 partitions, kept forever), created; its name."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep it until the future resolves
    admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1,
                                  config={"retention.ms": "-1"})])[topic].result(30)
    return topic


def produce(bootstrap: str, topic: str, groups: int, prefix: str, seed: int, from_round: int = 0) -> int:
    """Produce ``groups`` synthetic groups' telemetry; ``from_round`` > 0 continues groups
    already produced with the same prefix and seed (their rounds from_round..2*from_round-1)."""
    from confluent_kafka import Producer

    from lens_scenarios.synthetic import fleet_telemetry

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "lz4", "queue.buffering.max.messages": 1_000_000})
    n = 0
    rounds = ROUNDS + from_round
    for key, value, ts in fleet_telemetry(groups, members=4, partitions=12, rounds=rounds, seed=seed, prefix=prefix,
                                          restart_every=RESTART_EVERY,
                                          from_round=from_round):
        while True:
            try:
                producer.produce(topic, key=key, value=value, timestamp=ts)
                break
            except BufferError:
                producer.poll(0.1)
        n += 1
        if n % 50_000 == 0:
            producer.poll(0)
    producer.flush(120)
    return n


def floor_jobs(spark, bootstrap: str, topic: str, out: str) -> dict[str, float]:
    """Two floors, each a bare batch job Kafka -> parse -> Parquet: the envelope only (the
    body kept as text), and the whole event typed (envelope, then each body by its kind,
    as pipelines.validate.parse does: the JSON the pipeline must parse)."""
    from pyspark.sql import functions as F

    from pipelines import validate
    from pipelines.telemetry_types import envelope_schema

    raw = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
           .option("startingOffsets", "earliest").load())
    jobs = {
        "envelope": lambda: raw.select(F.from_json(F.col("value").cast("string"), envelope_schema()).alias("e"))
        .select("e.*"),
        "typed": lambda: validate.parse(raw.select(
            "topic", F.col("partition").alias("kafka_partition"), F.col("offset").alias("kafka_offset"),
            F.col("timestamp").alias("kafka_timestamp"), "value")).drop("value"),
    }
    took = {}
    for name, job in jobs.items():
        started = time.monotonic()
        job().write.mode("overwrite").parquet(f"{out}/{name}")
        took[name] = time.monotonic() - started
    return took


def timed_stage(spark, config, stage: str) -> float:
    from pipelines.stages import run_stage

    started = time.monotonic()
    run_stage(spark, config, stage, progress=lambda m: None)
    return time.monotonic() - started


def run_size(events: int, cores: int, keep: bool) -> None:
    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_runtime.spark_session import build_spark
    from pipelines.config import PipelineConfig
    from pipelines.stages import STAGES

    groups = max(1, events // (EVENTS_PER_GROUP * ROUNDS))
    work = Path(tempfile.mkdtemp(prefix="lens-bench-"))
    with EmbeddedKafka() as broker:
        topic = create_topic(broker.bootstrap_servers)
        t0 = time.monotonic()
        n = produce(broker.bootstrap_servers, topic, groups, "bench", seed=1)
        print(f"\n== {n:,} events ({groups} groups), produced in {time.monotonic() - t0:.1f} s", flush=True)
        config = PipelineConfig(bootstrap_servers=broker.bootstrap_servers, lake_path=str(work / "lake"),
                                topic=topic, spark_master=f"local[{cores}]")
        spark = build_spark(config.spark_settings("pipeline-benchmark"))
        try:
            floors = floor_jobs(spark, broker.bootstrap_servers, topic, str(work / "floor"))
            for name, took in floors.items():
                print(f"floor, {name} (Kafka -> parse JSON -> Parquet): {took:.1f} s, "
                      f"{n / took / cores:,.0f} events/s/core", flush=True)
            total = 0.0
            full_took = {}
            for stage in STAGES:
                with PeakMemory(spark) as mem:
                    full_took[stage] = timed_stage(spark, config, stage)
                took = full_took[stage]
                total += took if stage != "sql" else 0.0  # the floors parse and write; the marts come after
                print(f"{stage:>9}: {took:7.1f} s  {n / took / cores:10,.0f} events/s/core  {mem}", flush=True)
            print(f"recommend vs gold: {full_took['recommend']:.1f} s vs {full_took['gold']:.1f} s = "
                  f"{full_took['recommend'] / full_took['gold']:.1%} of gold (target <= 20%)", flush=True)
            print(f"sql build vs gold: {full_took['sql']:.1f} s vs {full_took['gold']:.1f} s = "
                  f"{full_took['sql'] / full_took['gold']:.1%} of gold", flush=True)
            print(f"full pipeline (without the SQL build): {total:.1f} s = " + ", ".join(
                f"{total / took:.2f} x the {name} floor" for name, took in floors.items()), flush=True)
            # 1% more events, twice: new groups (only they are recomputed), then 1% of the
            # groups going on for as many rounds again (their whole history is recomputed).
            batches = [("new groups", lambda: produce(broker.bootstrap_servers, topic, max(1, groups // 100),
                                                      "bench-late", seed=2)),
                       ("1% of the groups going on", lambda: produce(broker.bootstrap_servers, topic,
                                                                     max(1, groups // 100), "bench", seed=1,
                                                                     from_round=ROUNDS))]
            for label, make in batches:
                extra = make()
                with PeakMemory(spark) as mem:
                    took = {stage: timed_stage(spark, config, stage) for stage in STAGES}
                incremental = sum(t for stage, t in took.items() if stage != "sql")
                print(f"incremental over {extra:,} new events ({extra / n:.1%}, {label}): {incremental:.1f} s = "
                      f"{incremental / total:.1%} of the full run (without the SQL build)  {mem}\n    by stage: " + ", ".join(
                          f"{stage} {took[stage]:.1f} s ({took[stage] / full_took[stage]:.0%})" for stage in STAGES),
                      flush=True)
        finally:
            spark.stop()
            if keep:
                print(f"lake and floor output kept in {work}", flush=True)
            else:
                shutil.rmtree(work, ignore_errors=True)  # 3 GB at 10M events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, action="append", help="synthetic events (repeatable); default 1M")
    parser.add_argument("--cores", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--keep", action="store_true", help="keep the lake and the floor output (to inspect)")
    args = parser.parse_args()
    for events in args.events or [1_000_000]:
        run_size(events, args.cores, args.keep)


if __name__ == "__main__":
    main()
