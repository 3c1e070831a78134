"""Where a stage's time goes: each Spark SQL execution of validate, silver and gold, with its duration.

    .venv/bin/python benchmarks/stage_profile.py --events 1000000 [--lake DIR] [--min-s 0.3]

Produces the benchmark's synthetic telemetry into the embedded broker and ingests it
into a bronze lake at DIR (kept, and reused by a later run with the same DIR: building
10M events takes about 5 minutes), then runs validate, silver and gold on a copy of it
and prints, per stage, its time and each SQL execution that took at least ``--min-s``
seconds with the top of its physical plan. Executions nest (a streaming batch holds
the queries its foreachBatch ran), so their times do not add up to the stage's.
The whole-pipeline figures and ratios come from pipeline_throughput.py; this says
which query to look at.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from pipeline_throughput import EVENTS_PER_GROUP, ROUNDS, create_topic, produce


def build_bronze(lake: Path, events: int) -> None:
    from pipelines.config import PipelineConfig
    from pipelines.jobs import run_pipeline
    from pipelines.runtime.kafka_broker import EmbeddedKafka
    from pipelines.runtime.spark_session import SparkSettings, build_spark

    groups = max(1, events // (EVENTS_PER_GROUP * ROUNDS))
    with EmbeddedKafka() as broker:
        topic = create_topic(broker.bootstrap_servers)
        n = produce(broker.bootstrap_servers, topic, groups, "bench", seed=1)
        print(f"produced {n:,} events ({groups} groups); ingesting into {lake}", flush=True)
        spark = build_spark(SparkSettings.resolve(master="local[2]", lake=str(lake), app_name="stage-profile"))
        try:
            run_pipeline(spark, PipelineConfig(bootstrap_servers=broker.bootstrap_servers, lake_path=str(lake),
                                               topic=topic), stages=["ingest"])
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--lake", type=Path, help="bronze lake to build or reuse (default: a temporary one)")
    parser.add_argument("--min-s", type=float, default=0.3)
    args = parser.parse_args()
    from pipelines.config import PipelineConfig
    from pipelines.jobs import run_pipeline
    from pipelines.runtime.spark_session import SparkSettings, build_spark

    bronze = args.lake or Path(tempfile.mkdtemp(prefix="lens-profile-")) / "lake"
    if not (bronze / "bronze" / "telemetry_raw").exists():
        build_bronze(bronze, args.events)
    work = Path(tempfile.mkdtemp(prefix="lens-profile-run-")) / "lake"
    shutil.copytree(bronze, work)
    spark = build_spark(SparkSettings.resolve(master="local[2]", lake=str(work), app_name="stage-profile"))
    last = -1  # the listener records executions asynchronously: go by id, not by count
    try:
        config = PipelineConfig(bootstrap_servers="unused:9092", lake_path=str(work))  # ingest does not run
        for stage in ("validate", "silver", "gold"):
            started = time.monotonic()
            run_pipeline(spark, config, stages=[stage], progress=lambda m: None)
            print(f"== {stage}: {time.monotonic() - started:.1f} s", flush=True)
            listed, last = executions(spark, last, args.min_s)
            for execution, took, plan in listed:
                print(f"  {execution:4d} {took:7.1f} s  {plan}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work.parent, ignore_errors=True)
        if args.lake is None:
            shutil.rmtree(bronze.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
