"""Recommend on one large group: its candidates replayed by one task, then in shares over tasks, beside gold.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/recommend_shares.py [--members 200] [--partitions 2000] [--hours 24]

One group of ``lens_scenarios.synthetic.long_lived_telemetry`` (steady cooperative-sticky owners, a
member restarting every 2 hours, a daily rolling restart) produced into an embedded broker and run
through gold; then the recommend stage twice on that lake, its mark reset between: with every group
priced by one task (``SHARED_FROM`` above any group) and as the stage runs it (a group with
``SHARED_FROM`` intervals in its window priced in shares, one task each). Prints each run's seconds,
its share of gold's time and the Python workers' peak memory, and checks that both wrote the same rows.
"""
from __future__ import annotations

import argparse
import time

from pipeline_throughput import LargeShape, PeakMemory, bench_lake, send, timed_stage

TARGET_SHARE = 0.20  # recommend at most 20% of gold's time (issue 54)


def _rows(spark, config) -> list[list[str]]:
    from pipelines import catalog, lake

    return [sorted(repr(tuple(r)) for r in lake.read(spark, config.lake_path, t).collect())
            for t in (catalog.WHAT_IF, catalog.RECOMMENDATIONS)]


def main() -> None:
    from pipelines import lake
    from pipelines.recommend import stage as recommend_stage

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--hours", type=int, default=24)
    args = parser.parse_args()
    shape = LargeShape(1, args.members, args.partitions)
    with bench_lake(2, False) as (bootstrap, topic, config, spark, _):
        n = send(bootstrap, topic, shape.telemetry(args.hours))
        print(f"== {shape}, {args.hours} h: {n:,} events", flush=True)
        for stage in ("ingest", "validate", "silver"):
            timed_stage(spark, config, stage)
        with PeakMemory(spark) as gold_mem:
            gold_s, _ = timed_stage(spark, config, "gold")
        print(f"gold: {gold_s:.1f} s  {gold_mem}", flush=True)
        shared_from, took, rows = recommend_stage.SHARED_FROM, {}, {}
        for label, threshold in (("one task", 10**12), ("in shares", shared_from)):
            recommend_stage.SHARED_FROM = threshold
            lake.set_stage_mark(spark, config.lake_path, "recommend", -1)
            with PeakMemory(spark) as mem:
                took[label], _ = timed_stage(spark, config, "recommend")
            rows[label] = _rows(spark, config)
            print(f"recommend, {label}: {took[label]:.1f} s = {took[label] / gold_s:.1%} of gold "
                  f"(target {TARGET_SHARE:.0%})  {mem}", flush=True)
        recommend_stage.SHARED_FROM = shared_from
        print(f"in shares / one task: {took['in shares'] / took['one task']:.2f}; the same rows written: "
              f"{rows['in shares'] == rows['one task']}", flush=True)


if __name__ == "__main__":
    start = time.monotonic()
    main()
    print(f"({time.monotonic() - start:.0f} s in all)")
