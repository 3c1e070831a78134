"""Where a stage's time goes: each Spark SQL execution of validate, silver and gold, with its duration.

    .venv/bin/python benchmarks/stage_profile.py --events 1000000 [--lake DIR] [--min-s 0.3] [--incremental 0.01]

Produces the benchmark's synthetic telemetry into the embedded broker and ingests it
into a bronze lake at DIR (kept, and reused by a later run with the same DIR: building
10M events takes about 5 minutes), then runs validate, silver and gold on a copy of it
and prints, per stage, its time and each SQL execution that took at least ``--min-s``
seconds with the top of its physical plan. Executions nest (a streaming batch holds
the queries its foreachBatch ran), so their times do not add up to the stage's.
The whole-pipeline figures and ratios come from pipeline_throughput.py; this says
which query to look at.

With ``--incremental SHARE`` that share of the groups is held back from the copy's
bronze table, the stages run without them, then their rows are appended to bronze (as
ingest would) and the stages run and are profiled again: an incremental run over new
groups, where fixed costs per stage dominate.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from pipeline_throughput import EVENTS_PER_GROUP, ROUNDS, create_topic, produce


def build_bronze(lake: Path, events: int) -> None:
    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_runtime.spark_session import build_spark
    from pipelines.config import PipelineConfig
    from pipelines.stages import run_stage

    groups = max(1, events // (EVENTS_PER_GROUP * ROUNDS))
    with EmbeddedKafka() as broker:
        topic = create_topic(broker.bootstrap_servers)
        n = produce(broker.bootstrap_servers, topic, groups, "bench", seed=1)
        print(f"produced {n:,} events ({groups} groups); ingesting into {lake}", flush=True)
        config = PipelineConfig(bootstrap_servers=broker.bootstrap_servers, lake_path=str(lake), topic=topic)
        spark = build_spark(config.spark_settings("stage-profile"))
        try:
            run_stage(spark, config, "ingest")
        finally:
            spark.stop()


def executions(spark, after: int, min_s: float) -> tuple[list[tuple[int, float, str]], int]:
    """(id, seconds, top of the physical plan) of the finished SQL executions with an id above
    ``after`` that took ``min_s`` or more, and the highest id seen."""
    store = spark._jsparkSession.sharedState().statusStore()
    listed = store.executionsList()
    out = []
    for i in range(listed.size()):
        e = listed.apply(i)
        end = e.completionTime()
        if e.executionId() <= after or not end.isDefined():
            continue
        took = (end.get().getTime() - e.submissionTime()) / 1000
        plan = e.physicalPlanDescription().split("== Physical Plan ==")[-1].strip().splitlines()
        ops = [line.strip()[:60] for line in plan[:40] if line.strip() and not line.strip().startswith("(")]
        out.append((e.executionId(), took, " | ".join(ops[:6])))
    return [row for row in out if row[1] >= min_s], max((row[0] for row in out), default=after)


def hold_back(spark, lake: Path, share: float):
    """Remove ``share`` of the groups (by a hash of the group id) from the lake's bronze
    table; their rows, to append later."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from pipelines.catalog import BRONZE

    path = BRONZE.location(str(lake))
    group = F.get_json_object(F.col("value").cast("string"), "$.group_id")
    held = F.pmod(F.xxhash64(group), F.lit(10_000)) < int(share * 10_000)
    spark.read.format("delta").load(path).where(held).write.parquet(str(lake.parent / "held"))
    DeltaTable.forPath(spark, path).delete(held)
    return spark.read.parquet(str(lake.parent / "held"))


def profile_stages(spark, config, last: int, min_s: float, label: str) -> int:
    """Run validate, silver and gold, printing each one's time and slow SQL executions."""
    from pipelines.stages import run_stage

    for stage in ("validate", "silver", "gold"):
        started = time.monotonic()
        run_stage(spark, config, stage, progress=lambda m: None)
        print(f"== {label}{stage}: {time.monotonic() - started:.1f} s", flush=True)
        listed, last = executions(spark, last, min_s)
        for execution, took, plan in listed:
            print(f"  {execution:4d} {took:7.1f} s  {plan}", flush=True)
    return last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--lake", type=Path, help="bronze lake to build or reuse (default: a temporary one)")
    parser.add_argument("--min-s", type=float, default=0.3)
    parser.add_argument("--incremental", type=float, default=0.0,
                        help="share of the groups to hold back and then profile as an incremental run")
    args = parser.parse_args()
    from lens_runtime.spark_session import build_spark
    from pipelines.catalog import BRONZE
    from pipelines.config import PipelineConfig

    bronze = args.lake or Path(tempfile.mkdtemp(prefix="lens-profile-")) / "lake"
    if not Path(BRONZE.location(str(bronze))).exists():
        build_bronze(bronze, args.events)
    work = Path(tempfile.mkdtemp(prefix="lens-profile-run-")) / "lake"
    shutil.copytree(bronze, work)
    config = PipelineConfig(bootstrap_servers="unused:9092", lake_path=str(work))  # ingest does not run
    spark = build_spark(config.spark_settings("stage-profile"))
    last = -1  # the listener records executions asynchronously: go by id, not by count
    try:
        held = None
        if args.incremental:
            held = hold_back(spark, work, args.incremental)
            _, last = executions(spark, last, 0.0)  # not part of any stage
        last = profile_stages(spark, config, last, args.min_s, "")
        if held is not None:
            held.write.format("delta").mode("append").save(BRONZE.location(str(work)))
            print(f"appended {held.count():,} held-back rows to bronze", flush=True)
            profile_stages(spark, config, last, args.min_s, "incremental ")
    finally:
        spark.stop()
        shutil.rmtree(work.parent, ignore_errors=True)
        if args.lake is None:
            shutil.rmtree(bronze.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
