"""Pipeline throughput on synthetic telemetry: events/s/core per stage, incremental vs full, vs the floor.

    .venv/bin/python benchmarks/pipeline_throughput.py --events 1000000 [--events 10000000] [--keep]
    .venv/bin/python benchmarks/pipeline_throughput.py --shape large --history-hours 18 [--multiple 1 --multiple 10]

Two shapes of telemetry, each produced into an embedded broker and run on a fresh lake.

``--shape small`` (the default): many small groups (4 members x 12 partitions,
lens_scenarios.synthetic.fleet_telemetry: graceful eager rebalances, some skipped commits, a
member restarted every 5 rounds). For each ``--events`` size:

1. the floors: bare Spark batch jobs that read the same topic, parse the JSON and
   write Parquet: the envelope only, and the whole event typed (what the pipeline must
   parse: the least any pipeline on this stack must do);
2. the full pipeline, stage by stage (ingest, validate, silver, gold, recommend, sql), timed, with the
   peak RSS of the Spark JVM, the Python driver and the Python workers sampled every 0.2 s, and the
   driver heap ceiling, peak in use, peak live after GC and GC time from the JVM's MXBeans;
3. 1% more events and an incremental run, twice: new groups, then 1% of the groups
   going on (each stage reads their new events and what it kept, not their history).

Prints events/s/core per stage, pipeline/floor and incremental/full time ratios, and under each
stage its cost model (``pipelines.stage_costs``): Spark jobs, Delta commits per table, data files
written, set-up time before its first job.

``--shape large``: few large long-lived groups (``--groups`` x ``--members`` x ``--partitions``,
lens_scenarios.synthetic.long_lived_telemetry: steady cooperative-sticky ownership, a progress and
a commit event per member every 30 s, a member restarting every 2 hours and a daily rolling
restart). For each ``--multiple`` k of ``--history-hours`` H (default 1 and 10): k x H hours of
history, the full pipeline stage by stage as above (no floors), then ``--new-hours`` more hours
(default 1) of the same groups and an incremental run, stage by stage. Prints per stage seconds, incremental/full and
the peak RSS of the Python workers; at the end how the incremental run grew with history.

``--shape eager``: the same, but the groups (default 2 x 60 members x 240 partitions) use the eager
protocol and a rebalance every ``--eager-every-min`` minutes (default 20) revokes every partition
and assigns each to another member: every partition has new handoffs every hour.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

EVENTS_PER_GROUP = 3 * 12 + 2 * 4  # per round: 12 partitions x (fetch, progress, commit) + 4 members x (assign, revoke)
ROUNDS = 20
RESTART_EVERY = 5  # each group restarts a member every 5 rounds: churn for the recommend stage's replays


class PeakMemory:
    """Memory while the block runs: the driver JVM's heap ceiling (-Xmx, i.e.
    spark.driver.memory, default 1g; in local mode the executors live in this JVM too),
    its heap in use (sampled every 0.2 s), its live heap after each collection (what the
    job really holds: the in-use figure also counts garbage not collected yet), GC time,
    and the peak RSS of the Spark JVM (not the embedded broker's, also a child of this
    process), of this Python process and of the Python workers (the JVM's children:
    pyspark.daemon and the workers it forks): the peak of their sum, of the largest one, and
    how many ran at once. The workers are forks of the daemon: the sum counts their shared
    pages once per process. A reused worker keeps the memory a group needed after the task
    ends (until Spark stops it, idle): ``workers_at_start`` says what the block began with."""

    def __init__(self, spark) -> None:
        self._jvm = spark.sparkContext._jvm
        factory = self._jvm.java.lang.management.ManagementFactory
        self._heap_pools = {str(p.getName()) for p in factory.getMemoryPoolMXBeans()
                            if str(p.getType()) == "Heap memory"}
        self._collectors = list(factory.getGarbageCollectorMXBeans())
        self._runtime = self._jvm.java.lang.Runtime.getRuntime()
        # spark-submit execs the JVM: the gateway's process is the Spark JVM
        self._spark_jvm = psutil.Process(spark.sparkContext._gateway.proc.pid)

    def _gc_ms(self) -> int:
        return sum(c.getCollectionTime() for c in self._collectors)

    def __enter__(self) -> "PeakMemory":
        self.python = self.jvm = self.heap_used = self.heap_live = 0
        self.workers = self.worker_max = self.worker_count = 0
        self.workers_at_start = sum(self._worker_rss())
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

    def _worker_rss(self) -> list[int]:
        """The RSS of each Python process under the Spark JVM. Workers come and go: one that
        exits while we look is skipped (an unchecked exit killed this sampler once)."""
        rss = []
        for child in self._spark_jvm.children(recursive=True):
            try:
                if "java" not in child.name():
                    rss.append(child.memory_info().rss)
            except psutil.NoSuchProcess:
                pass
        return rss

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            self.python = max(self.python, me.memory_info().rss)
            self.jvm = max(self.jvm, self._spark_jvm.memory_info().rss)
            workers = self._worker_rss()
            self.workers = max(self.workers, sum(workers))
            self.worker_max = max(self.worker_max, max(workers, default=0))
            self.worker_count = max(self.worker_count, len(workers))
            self.heap_used = max(self.heap_used, self._runtime.totalMemory() - self._runtime.freeMemory())
            self.heap_live = max(self.heap_live, self._live_after_last_gc())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.heap_max = self._runtime.maxMemory()
        self.gc_s = (self._gc_ms() - self._start_gc_ms) / 1000.0

    def workers_summary(self) -> str:
        mib = 2**20
        return (f"Python workers {self.workers / mib:,.0f} MiB (largest {self.worker_max / mib:,.0f}, "
                f"{self.worker_count} processes; {self.workers_at_start / mib:,.0f} at start)")

    def __str__(self) -> str:
        mib = 2**20
        return (f"driver heap: ceiling {self.heap_max / mib:,.0f} MiB, in use <= {self.heap_used / mib:,.0f}, "
                f"live after GC <= {self.heap_live / mib:,.0f} (GC {self.gc_s:.1f} s); "
                f"Spark JVM RSS {self.jvm / mib:,.0f} MiB, Python driver {self.python / mib:,.0f} MiB, "
                f"{self.workers_summary()}")


def create_topic(bootstrap: str, topic: str = "rebalance-lens-telemetry") -> str:
    """The benchmark's telemetry topic (4 partitions, kept forever), created; its name."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep it until the future resolves
    admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1,
                                  config={"retention.ms": "-1"})])[topic].result(30)
    return topic


def send(bootstrap: str, topic: str, events: Iterable[tuple]) -> int:
    """Produce (key, value, timestamp ms[, partition]) tuples; how many."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "lz4", "queue.buffering.max.messages": 1_000_000})
    n = 0
    for key, value, ts, *partition in events:
        placed = {"partition": partition[0]} if partition else {}
        while True:
            try:
                producer.produce(topic, key=key, value=value, timestamp=ts, **placed)
                break
            except BufferError:
                producer.poll(0.1)
        n += 1
        if n % 50_000 == 0:
            producer.poll(0)
    producer.flush(120)
    return n


def produce(bootstrap: str, topic: str, groups: int, prefix: str, seed: int, from_round: int = 0) -> int:
    """Produce ``groups`` synthetic groups' telemetry; ``from_round`` > 0 continues groups
    already produced with the same prefix and seed (their rounds from_round..2*from_round-1)."""
    from lens_scenarios.synthetic import fleet_telemetry

    return send(bootstrap, topic, fleet_telemetry(groups, members=4, partitions=12, rounds=ROUNDS + from_round,
                                                  seed=seed, prefix=prefix, restart_every=RESTART_EVERY,
                                                  from_round=from_round))


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


def bronze_reread_seconds(spark, config) -> float:
    """A bare read of bronze's values, as validate reads what ingest just wrote."""
    from pipelines import catalog, lake

    started = time.monotonic()
    lake.read(spark, config.lake_path, catalog.BRONZE).select("value").write.format("noop").mode("overwrite").save()
    return time.monotonic() - started


def timed_stage(spark, config, stage: str, costs=None) -> tuple[float, dict[str, int]]:
    """The stage's seconds and counts (validate's say whether the generator's events all passed);
    ``costs`` (``pipelines.stage_costs.StageCosts``): its cost model too."""
    from pipelines.stages import run_stage

    started = time.monotonic()
    with costs.measure(stage) if costs is not None else nullcontext():
        counts = run_stage(spark, config, stage, progress=lambda m: None)
    return time.monotonic() - started, counts


def run_stages(spark, config, n: int, cores: int,
               label: str = "") -> tuple[dict[str, float], dict[str, PeakMemory]]:
    """Every stage in turn, each timed, its memory sampled and its cost model measured; prints
    two lines per stage (events/s/core over ``n`` events; its Spark jobs, Delta commits, files
    and set-up); returns the seconds and the memory by stage."""
    from pipelines.config import describe
    from pipelines.stage_costs import StageCosts
    from pipelines.stages import STAGES

    took, mems, costs = {}, {}, StageCosts(spark, config.lake_path)
    for stage in STAGES:
        with PeakMemory(spark) as mems[stage]:
            took[stage], counts = timed_stage(spark, config, stage, costs)
        print(f"{label}{stage:>9}: {took[stage]:7.1f} s  {n / took[stage] / cores:10,.0f} events/s/core  "
              f"{mems[stage]}" + (f"\n    {describe(counts)}" if stage == "validate" else "")
              + f"\n    cost: {costs[stage].line()}", flush=True)
    return took, mems


def pipeline_seconds(took: dict[str, float]) -> float:
    """The data stages' seconds: the floors parse and write; the marts (sql) come after."""
    return sum(t for stage, t in took.items() if stage != "sql")


@contextmanager
def bench_lake(cores: int, keep: bool) -> Iterator[tuple[str, str, Any, Any, Path]]:
    """(bootstrap, topic, config, spark, work folder): an embedded broker with an empty
    telemetry topic, and a Spark session over a fresh lake; all removed after (the lake kept
    with ``keep``)."""
    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_runtime.spark_session import build_spark
    from pipelines.config import PipelineConfig

    work = Path(tempfile.mkdtemp(prefix="lens-bench-"))
    with EmbeddedKafka() as broker:
        topic = create_topic(broker.bootstrap_servers)
        config = PipelineConfig(bootstrap_servers=broker.bootstrap_servers, lake_path=str(work / "lake"),
                                topic=topic, spark_master=f"local[{cores}]")
        spark = build_spark(config.spark_settings("pipeline-benchmark"))
        try:
            yield broker.bootstrap_servers, topic, config, spark, work
        finally:
            spark.stop()
            if keep:
                print(f"lake and floor output kept in {work}", flush=True)
            else:
                shutil.rmtree(work, ignore_errors=True)  # 3 GB at 10M events


def run_size(events: int, cores: int, keep: bool) -> None:
    """The small shape: many small groups, ``events`` events."""
    from pipelines.stage_costs import StageCosts
    from pipelines.stages import STAGES

    groups = max(1, events // (EVENTS_PER_GROUP * ROUNDS))
    with bench_lake(cores, keep) as (bootstrap, topic, config, spark, work):
        t0 = time.monotonic()
        n = produce(bootstrap, topic, groups, "bench", seed=1)
        print(f"\n== {n:,} events ({groups} groups), produced in {time.monotonic() - t0:.1f} s", flush=True)
        floors = floor_jobs(spark, bootstrap, topic, str(work / "floor"))
        for name, took in floors.items():
            print(f"floor, {name} (Kafka -> parse JSON -> Parquet): {took:.1f} s, "
                  f"{n / took / cores:,.0f} events/s/core", flush=True)
        full_took, _ = run_stages(spark, config, n, cores)
        total = pipeline_seconds(full_took)
        print(f"recommend vs gold: {full_took['recommend']:.1f} s vs {full_took['gold']:.1f} s = "
              f"{full_took['recommend'] / full_took['gold']:.1%} of gold (target <= 20%)", flush=True)
        print(f"sql build vs gold: {full_took['sql']:.1f} s vs {full_took['gold']:.1f} s = "
              f"{full_took['sql'] / full_took['gold']:.1%} of gold", flush=True)
        print(f"full pipeline (without the SQL build): {total:.1f} s = " + ", ".join(
            f"{total / took:.2f} x the {name} floor" for name, took in floors.items()), flush=True)
        reread = bronze_reread_seconds(spark, config)
        print(f"validate's read of bronze (the most that fusing ingest and validation into one pass over the "
              f"topic saves, besides a commit): {reread:.1f} s = {reread / total:.1%} of the pipeline", flush=True)
        # 1% more events, twice: new groups (only they are recomputed), then 1% of the
        # groups going on for as many rounds again.
        batches = [("new groups", lambda: produce(bootstrap, topic, max(1, groups // 100), "bench-late", seed=2)),
                   ("1% of the groups going on", lambda: produce(bootstrap, topic, max(1, groups // 100), "bench",
                                                                 seed=1, from_round=ROUNDS))]
        for label, make in batches:
            extra = make()
            costs = StageCosts(spark, config.lake_path)
            with PeakMemory(spark) as mem:
                took = {stage: timed_stage(spark, config, stage, costs)[0] for stage in STAGES}
            incremental = pipeline_seconds(took)
            by_stage = ", ".join(f"{stage} {took[stage]:.1f} s ({took[stage] / full_took[stage]:.0%})"
                                 for stage in STAGES)
            print(f"incremental over {extra:,} new events ({extra / n:.1%}, {label}): {incremental:.1f} s = "
                  f"{incremental / total:.1%} of the full run (without the SQL build)  {mem}\n    by stage: "
                  + by_stage + "".join(f"\n    {stage} cost: {costs[stage].line()}" for stage in STAGES), flush=True)


@dataclass(frozen=True)
class LargeShape:
    """Few large long-lived groups (lens_scenarios.synthetic.long_lived_telemetry); with
    ``eager_every_min`` > 0, an eager rebalance moves every partition that often."""

    groups: int
    members: int
    partitions: int
    eager_every_min: int = 0

    def telemetry(self, hours: int, from_hour: int = 0) -> Iterator[tuple[str, str, int]]:
        from lens_scenarios.synthetic import long_lived_telemetry

        return long_lived_telemetry(self.groups, self.members, self.partitions, hours, seed=1,
                                    prefix="eager" if self.eager_every_min else "long", from_hour=from_hour,
                                    eager_every_min=self.eager_every_min)

    def __str__(self) -> str:
        rounds = f", an eager round every {self.eager_every_min} min" if self.eager_every_min else ""
        return f"{self.groups} groups x {self.members} members x {self.partitions} partitions{rounds}"


@dataclass
class HistoryRun:
    """One history's figures: events, then seconds and memory by stage, full and incremental."""

    hours: int
    events: int
    new_events: int
    full: dict[str, float]
    incremental: dict[str, float]
    full_mem: dict[str, PeakMemory]
    incremental_mem: dict[str, PeakMemory]


def run_history(shape: LargeShape, hours: int, new_hours: int, cores: int, keep: bool) -> HistoryRun:
    """``hours`` of the large shape's history, the full pipeline, then ``new_hours`` more and an incremental run."""
    with bench_lake(cores, keep) as (bootstrap, topic, config, spark, _):
        t0 = time.monotonic()
        n = send(bootstrap, topic, shape.telemetry(hours))
        print(f"\n== {shape}, {hours} h of history: {n:,} events, produced in {time.monotonic() - t0:.1f} s",
              flush=True)
        full, full_mem = run_stages(spark, config, n, cores, "full ")
        t0 = time.monotonic()
        extra = send(bootstrap, topic, shape.telemetry(hours + new_hours, from_hour=hours))
        print(f"{new_hours} more hour(s): {extra:,} events ({extra / n:.1%} of the history), produced in "
              f"{time.monotonic() - t0:.1f} s", flush=True)
        incremental, incremental_mem = run_stages(spark, config, extra, cores, "incr ")
    run = HistoryRun(hours, n, extra, full, incremental, full_mem, incremental_mem)
    print_history(run)
    return run


def print_history(run: HistoryRun) -> None:
    mib = 2**20
    print(f"-- {run.hours} h of history ({run.events:,} events), then {run.new_events:,} new events "
          f"({run.new_events / run.events:.1%}):\n"
          f"{'stage':>9}  {'full s':>7}  {'incr s':>7}  {'incr/full':>9}  "
          f"{'Python workers peak RSS, MiB: full / incr (largest one)':>56}")
    for stage in run.full:
        full, incr = run.full_mem[stage], run.incremental_mem[stage]
        print(f"{stage:>9}  {run.full[stage]:7.1f}  {run.incremental[stage]:7.1f}  "
              f"{run.incremental[stage] / run.full[stage]:9.0%}  "
              f"{full.workers / mib:>19,.0f} ({full.worker_max / mib:,.0f}) / "
              f"{incr.workers / mib:,.0f} ({incr.worker_max / mib:,.0f})")
    full, incr = pipeline_seconds(run.full), pipeline_seconds(run.incremental)
    print(f"{'pipeline':>9}  {full:7.1f}  {incr:7.1f}  {incr / full:9.0%}  (without the SQL build)", flush=True)


def run_large(shape: LargeShape, history_hours: int, multiples: list[int], new_hours: int, cores: int,
              keep: bool) -> None:
    """The large shape at each multiple of ``history_hours``; then how the incremental run grew."""
    runs = [run_history(shape, history_hours * k, new_hours, cores, keep) for k in multiples]
    if len(runs) < 2:
        return
    first, last = runs[0], runs[-1]
    print(f"\n== incremental run ({new_hours} more hour(s)) as history grows {last.events / first.events:.1f}x: "
          f"{first.hours} h ({first.events:,} events) -> {last.hours} h ({last.events:,})")
    for stage in first.full:
        print(f"{stage:>9}: {first.incremental[stage]:7.1f} s -> {last.incremental[stage]:7.1f} s "
              f"({last.incremental[stage] / first.incremental[stage]:.2f}x)")
    a, b = pipeline_seconds(first.incremental), pipeline_seconds(last.incremental)
    print(f"{'pipeline':>9}: {a:7.1f} s -> {b:7.1f} s ({b / a:.2f}x, without the SQL build)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("small", "large", "eager"), default="small",
                        help="small: many small groups (--events); large: few large long-lived groups "
                             "(--history-hours); eager: the same, every partition moved by an eager rebalance every "
                             "--eager-every-min")
    parser.add_argument("--events", type=int, action="append", help="small: synthetic events (repeatable); default 1M")
    parser.add_argument("--history-hours", type=int, default=18, help="large: hours of history at 1x (default 18)")
    parser.add_argument("--multiple", type=int, action="append",
                        help="large: run this multiple of --history-hours (repeatable); default 1 and 10")
    parser.add_argument("--new-hours", type=int, default=1, help="large: hours of new events for the incremental run")
    parser.add_argument("--groups", type=int, default=2, help="large: groups (default 2)")
    parser.add_argument("--members", type=int, help="large, eager: members per group (default 20; eager 60)")
    parser.add_argument("--partitions", type=int, default=240, help="large: partitions per group (default 240)")
    parser.add_argument("--eager-every-min", type=int, default=20, help="eager: minutes between rounds (default 20)")
    parser.add_argument("--cores", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--keep", action="store_true", help="keep the lake and the floor output (to inspect)")
    args = parser.parse_args()
    if args.shape in ("large", "eager"):
        eager = args.eager_every_min if args.shape == "eager" else 0
        members = args.members or (60 if eager else 20)
        run_large(LargeShape(args.groups, members, args.partitions, eager), args.history_hours,
                  args.multiple or [1, 10], args.new_hours, args.cores, args.keep)
        return
    for events in args.events or [1_000_000]:
        run_size(events, args.cores, args.keep)


if __name__ == "__main__":
    main()
