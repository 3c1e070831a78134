"""The main job end to end on the embedded defaults: fleets under churn, their telemetry in Delta, the costs.

1. start the embedded Kafka broker;
2. play a small matrix of built-in scenarios (real member processes running the agent)
   under several assignors and commit styles, all sending telemetry to one topic, each
   writing its own ground truth;
3. run the pipeline (ingest, validate, silver, gold, recommend) into a fresh Delta lake;
4. print, per run, what gold measured beside what ground truth says;
5. print each run's top recommendation beside its measured cost;
6. write the tuning report (one HTML page, from the SQL marts) and print its path.
"""
from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass

from lens_runtime.paths import home

# (scenario, assignor, commit): the same rolling restart under each protocol, then the
# fixes (commit-on-revoke, static membership), then a crash.
DEMO_MATRIX: tuple[tuple[str, str, str], ...] = (
    ("rolling-restart", "range", "batch"),
    ("rolling-restart", "cooperative-sticky", "batch"),
    ("rolling-restart", "consumer", "batch"),
    ("rolling-restart", "range", "revoke"),
    ("static-rolling-restart", "range", "batch"),
    ("crash", "cooperative-sticky", "batch"),
)


@dataclass(frozen=True)
class RunCosts:
    """One run's costs, from gold and from ground truth, side by side."""

    label: str
    episodes: int
    handoffs_gold: int
    handoffs_truth: int
    duplicates_gold: int
    duplicates_gold_upper: int
    duplicates_truth: int
    unavailable_gold_s: float
    unavailable_gold_upper_s: float
    unavailable_truth_s: float


def _costs(label: str, truth, gold) -> RunCosts:
    summary = truth.summary()
    return RunCosts(label=label, episodes=int(gold.episodes or 0) if gold else 0,
                    handoffs_gold=int(gold.handoffs) if gold else 0, handoffs_truth=len(truth.handoffs),
                    duplicates_gold=int(gold.duplicates or 0) if gold else 0,
                    duplicates_gold_upper=int(gold.duplicates_upper or 0) if gold else 0,
                    duplicates_truth=summary.duplicates,
                    unavailable_gold_s=float(gold.unavailable_lower_s or 0.0) if gold else 0.0,
                    unavailable_gold_upper_s=float(gold.unavailable_upper_s or 0.0) if gold else 0.0,
                    unavailable_truth_s=sum(h.pause_s for h in truth.handoffs))


def _table(costs: list[RunCosts]):
    from rich.table import Table

    table = Table("run", "episodes", "handoffs gold/truth", "duplicates gold", "duplicates truth",
                  "unavailable gold (partition-s)", "unavailable truth (partition-s)",
                  title="Per run: gold (from telemetry) beside ground truth; a crash gives gold a bracket")
    for c in costs:
        table.add_row(c.label, str(c.episodes), f"{c.handoffs_gold}/{c.handoffs_truth}",
                      _bounds(c.duplicates_gold, c.duplicates_gold_upper, "d"), str(c.duplicates_truth),
                      _bounds(c.unavailable_gold_s, c.unavailable_gold_upper_s, ".2f"), f"{c.unavailable_truth_s:.2f}")
    return table


def _recommendations(costs: list[RunCosts], recommendations: dict[str, dict]):
    """Each run's top recommendation (rank 1) beside what its rebalances cost, as gold measured."""
    from rich.table import Table

    table = Table("run", "measured: duplicates / paused partition-s", "top recommendation", "config change",
                  "predicted saving: duplicates / paused partition-s",
                  title="What to change, per run (`rebalance-lens recommend` shows every recommendation)",
                  show_lines=True)
    for c in costs:
        r = recommendations.get(c.label)
        if r is None:
            continue
        saving = "" if r["duplicates_saved"] is None else \
            f"{r['duplicates_saved']:,.0f} / {r['pause_saved_s']:,.1f}"
        table.add_row(c.label, f"{_bounds(c.duplicates_gold, c.duplicates_gold_upper, 'd')} / "
                               f"{_bounds(c.unavailable_gold_s, c.unavailable_gold_upper_s, '.1f')}",
                      r["title"], "\n".join(r["config_change"]) or "-", saving)
    return table


def _bounds(lower: float, upper: float, spec: str) -> str:
    """A figure, or its bounds ``lower..upper`` when it is not known exactly."""
    return format(lower, spec) if upper == lower else f"{lower:{spec}}..{upper:{spec}}"


def run_demo(lake: str | None = None, master: str | None = None,
             matrix: tuple[tuple[str, str, str], ...] = DEMO_MATRIX) -> int:
    from rich.console import Console

    from lens_cli.scenario_commands import run_with_progress
    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_runtime.spark_session import build_spark
    from lens_scenarios.runner import RunOptions
    from lens_scenarios.spec import load
    from pipelines.config import PipelineConfig, embedded_broker_groups
    from pipelines import catalog
    from pipelines import lake as lake_tables
    from pipelines.gold.costs import read_costs
    from pipelines.stages import run_pipeline
    from tuning_report import write_report

    console = Console(width=None if sys.stdout.isatty() else 160)  # logs get the whole table, not 80 columns
    started = time.monotonic()
    out = home() / "demo" / time.strftime("%Y%m%d-%H%M%S")
    lake_path = lake or str(out / "lake")
    telemetry = f"rebalance-lens-telemetry-{uuid.uuid4().hex[:6]}"
    console.rule("[bold]rebalance-lens demo")
    console.print(f"Output: {out}\nStarting the embedded Kafka broker ...")
    with EmbeddedKafka() as broker:
        results = []
        for i, (name, assignor, commit) in enumerate(matrix, 1):
            console.print(f"\n[bold]Run {i}/{len(matrix)}[/]: {name} under {assignor}, commit {commit}")
            options = RunOptions(assignor=assignor, commit=commit, out_dir=out / "runs",
                                 bootstrap=broker.bootstrap_servers, telemetry_topic=telemetry)
            results.append((f"{name} / {assignor} / {commit}", run_with_progress(load(name), options, console)))

        console.print("\n[bold]Pipeline[/]: telemetry topic -> bronze -> validated -> silver -> gold (Delta)")
        config = PipelineConfig.resolve(bootstrap_servers=broker.bootstrap_servers, topic=telemetry,
                                        lake_path=lake_path, spark_master=master, **embedded_broker_groups())
        spark = build_spark(config.spark_settings("rebalance-lens-demo"))
        try:
            run_pipeline(spark, config, progress=lambda m: console.print(f"  {m}", markup=False))
            gold = read_costs(spark, lake_path)
            top = {r.group_id: r.asDict() for r in lake_tables.read(spark, lake_path, catalog.RECOMMENDATIONS)
                   .where("rank = 1").collect()}
        finally:
            spark.stop()
    costs = [_costs(label, run.truth, gold.get(run.manifest["group_id"])) for label, run in results]
    console.print()
    console.print(_table(costs))
    console.print(_recommendations(costs, {label: top[run.manifest["group_id"]] for label, run in results
                                           if run.manifest["group_id"] in top}))
    report = write_report(lake_path, out, progress=lambda m: console.print(f"  {m}", markup=False))
    console.print(f"\nReport: {report}\n        {report.resolve().as_uri()}\nDelta lake: {lake_path}\n"
                  f"Run folders (ground truth, manifests): {out / 'runs'}")
    console.print(f"Done in {time.monotonic() - started:.0f} s; broker, members and Spark stopped.")
    return 0
