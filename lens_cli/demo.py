"""The main job end to end on the embedded defaults: fleets under churn, their telemetry in Delta, the costs.

1. start the embedded Kafka broker;
2. play a small matrix of built-in scenarios (real member processes running the agent)
   under several assignors and commit styles, all sending telemetry to one topic, each
   writing its own ground truth; and a run whose members all run the plain client (no agent);
3. run the pipeline (ingest, broker, validate, silver, gold, recommend) into a fresh Delta lake: the
   broker stage reads the broker's own ``__consumer_offsets`` (every group's history), which gold
   prices beside the agent's figures (a group without the agent from it alone, as bounds);
4. print, per run, what gold measured beside what ground truth says, exact or bounded, and how many
   groups of the cluster gold holds from each source;
5. print each run's top recommendation beside its measured cost;
6. write the tuning report (one HTML page, from the SQL marts) and print its path.
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from lens_cli.demo_findings import RunCosts, bounds, findings
from lens_cli.recommend_commands import failure_words, predicted_effects, replay_words
from lens_runtime.errors import LensError
from lens_runtime.paths import home
from lens_scenarios.consumer_config import ASSIGNORS, COMMIT_STYLES

if TYPE_CHECKING:  # the pipeline's and the runner's types, without importing them at start
    from pyspark.sql import Row

    from lens_scenarios.runner import RunResult
    from pipelines.config import PipelineConfig

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
# Runs whose members all run the plain client: no telemetry, the group seen in the broker's log alone.
DEMO_PLAIN: tuple[tuple[str, str, str], ...] = (("rolling-restart", "consumer", "batch"),)


def parse_run(text: str) -> tuple[str, str, str]:
    """``SCENARIO/ASSIGNOR/COMMIT`` (``--run``) -> a matrix row, checked before anything starts."""
    from lens_scenarios.spec import builtin_names

    parts = text.split("/")
    if len(parts) != 3 or parts[0] not in builtin_names() or parts[1] not in ASSIGNORS or parts[2] not in COMMIT_STYLES:
        raise LensError(f"--run {text!r}: write SCENARIO/ASSIGNOR/COMMIT with a built-in scenario "
                        f"({', '.join(builtin_names())}), an assignor ({', '.join(ASSIGNORS)}) and a commit style "
                        f"({', '.join(COMMIT_STYLES)}), e.g. crash/cooperative-sticky/batch")
    return parts[0], parts[1], parts[2]


def _costs(scenario: str, assignor: str, commit: str, truth, gold, agent: bool = True) -> RunCosts:
    """Gold's costs (``read_costs(after_forming=True)``) beside truth's over the same handoffs:
    those after the group formed."""
    churn = [h for h in truth.handoffs if h.cause != "start"]
    return RunCosts(scenario=scenario, assignor=assignor, commit=commit, agent=agent,
                    episodes=int(gold.episodes or 0) if gold else 0,
                    handoffs_gold=int(gold.handoffs) if gold else 0, handoffs_truth=len(churn),
                    duplicates_gold=int(gold.duplicates or 0) if gold else 0,
                    duplicates_gold_upper=int(gold.duplicates_upper or 0) if gold else 0,
                    duplicates_truth=sum(h.duplicates for h in churn),
                    pause_gold_s=float(gold.pause_s or 0.0) if gold else 0.0,
                    pause_gold_upper_s=float(gold.pause_upper_s or 0.0) if gold else 0.0,
                    pause_truth_s=sum(h.pause_s for h in churn))


def costs_table(costs: list[RunCosts]):
    """Gold beside ground truth per run, in 80 columns."""
    from rich.table import Table

    table = Table("run\n(gold's figures)", "handoffs\ngold/truth", "duplicates\ngold / truth",
                  "paused partition-s\ngold / truth",
                  title="Per run, after the group formed: gold beside ground truth. Exact where the agent saw "
                        "it; a range where gold can only bound it (a crash; a group without the agent, from "
                        "the broker's log)")
    table.columns[0].no_wrap = True
    for c in costs:
        table.add_row(f"{escape(c.scenario)}\n{escape(c.assignor)}, {escape(c.commit)}\n({c.seen})",
                      f"{c.handoffs_gold}/{c.handoffs_truth}",
                      f"{bounds(c.duplicates_gold, c.duplicates_gold_upper, ',d')} / {c.duplicates_truth:,}",
                      f"{bounds(c.pause_gold_s, c.pause_gold_upper_s, ',.1f')} / "
                      f"{c.pause_truth_s:,.1f}")
    return table


def recommendation_lines(costs: list[RunCosts], recommendations: dict[str, dict]) -> list[str]:
    """Each run's top recommendation (rank 1) under what its rebalances cost, as gold measured."""
    lines = ["[bold]What to change, per run[/] (`rebalance-lens recommend` shows every recommendation)"]
    for c in costs:
        r = recommendations.get(c.label)
        if r is None:
            continue
        lines.append(f"\n[bold]{escape(c.label)}[/]\n  measured: "
                     f"{bounds(c.duplicates_gold, c.duplicates_gold_upper, ',d')} duplicates, "
                     f"{bounds(c.pause_gold_s, c.pause_gold_upper_s, ',.1f')} paused partition-s")
        if "failed" in r:  # the group's recommend pass failed: said, its recommendations are none
            lines.append(f"  -> {escape(r['failed'])}")
            continue
        lines.append(f"  -> {escape(r['title'])}")
        effects = [e for e in predicted_effects(r) if e]
        if effects:
            lines.append(f"     predicted: {', '.join(effects)}")
            if replay := replay_words(r):
                lines.append(f"     (shares of the measured; the model's own replay of this run: {replay})")
        lines.extend(f"     {escape(line)}" for line in r["config_change"])
    return lines


Played = tuple[tuple[str, str, str], bool, "RunResult"]  # (matrix row, whether its members ran the agent, result)


def _play_matrix(console, runs: list[tuple[tuple[str, str, str], bool]], servers: str, out: Path,
                 telemetry: str) -> list[Played]:
    """Each run on the broker at ``servers`` (its members on the agent, or all on the plain client),
    its progress shown."""
    from lens_cli.scenario_commands import run_with_progress
    from lens_scenarios.runner import RunOptions
    from lens_scenarios.spec import load, without_agent

    results = []
    for i, ((name, assignor, commit), agent) in enumerate(runs, 1):
        plain = "" if agent else ", every member on the plain client (no agent: seen from the broker's log)"
        console.print(f"\n[bold]Run {i}/{len(runs)}[/]: {name} under {assignor}, commit {commit}{plain}")
        options = RunOptions(assignor=assignor, commit=commit, out_dir=out / "runs",
                             bootstrap=servers, telemetry_topic=telemetry)
        scenario = load(name) if agent else without_agent(load(name))
        results.append(((name, assignor, commit), agent, run_with_progress(scenario, options, console)))
    return results


def _run_pipeline(console, config: PipelineConfig) -> tuple[dict[str, Row], dict[str, dict]]:
    """Every stage into ``config``'s lake; gold's costs and the top recommendation, by group name."""
    from lens_cli.live_spark import run_stages, start_spark
    from pipelines import catalog
    from pipelines import lake as lake_tables
    from pipelines.gold.costs import read_costs

    spark = start_spark(config.spark_settings("rebalance-lens-demo"), console)
    try:
        run_stages(spark, config, ("all",), console)
        # the demo's runs share one cluster: its group names name its groups
        gold = {group: r for (_cluster, group), r in read_costs(spark, config.lake_path, after_forming=True).items()}
        top = {r.group_id: r.asDict() for r in lake_tables.read(spark, config.lake_path, catalog.RECOMMENDATIONS)
               .where("rank = 1").collect()}
        if lake_tables.exists(spark, config.lake_path, catalog.RECOMMEND_FAILURES):
            top |= {r.group_id: {"failed": failure_words(r.asDict())}
                    for r in lake_tables.read(spark, config.lake_path, catalog.RECOMMEND_FAILURES).collect()}
    finally:
        spark.stop()
    return gold, top


def fleet_line(gold: dict[str, Row]) -> str:
    """How many groups of the cluster gold priced handoffs of (``read_costs``' rows), and from which source."""
    broker_only = sum(1 for r in gold.values() if r.handoffs and r.broker_handoffs == r.handoffs)
    return (f"Gold priced the handoffs of {len(gold)} group(s) on the cluster: {len(gold) - broker_only} with the "
            f"agent on their members (exact figures, a crash bounded), {broker_only} seen only in the broker's "
            "__consumer_offsets (bounds).")


def _print_costs(console, results: list[Played], gold: dict[str, Row], top: dict[str, dict]) -> None:
    """Per run, gold beside ground truth, its top recommendation, and what the runs showed."""
    costs = [_costs(*key, run.truth, gold.get(run.manifest["group_id"]), agent) for key, agent, run in results]
    console.print()
    console.print(costs_table(costs))
    console.print(escape(fleet_line(gold)))
    console.print("\n".join(recommendation_lines(costs, {c.label: top[run.manifest["group_id"]]
                                                     for c, (_key, _agent, run) in zip(costs, results)
                                                     if run.manifest["group_id"] in top})))
    said = findings(costs)
    if said:
        console.print("\n[bold]What the runs showed[/]")
        for sentence in said:
            console.print(f"- {escape(sentence)}")


def run_demo(lake: str | None = None, master: str | None = None,
             matrix: tuple[tuple[str, str, str], ...] = DEMO_MATRIX, bootstrap: str | None = None,
             plain: tuple[tuple[str, str, str], ...] = DEMO_PLAIN) -> int:
    """The demo; ``bootstrap`` runs it on that Kafka cluster (else the broker rule of every command,
    ``lens_runtime.broker_choice``: a broker of its own when none is given or running); ``plain``: runs
    whose members run the plain client."""
    from rich.console import Console

    from lens_runtime.broker_choice import Fallback, broker_for
    from pipelines.config import PipelineConfig, embedded_broker_groups
    from tuning_report import write_report

    console = Console(highlight=False)
    started = time.monotonic()
    out = home() / "demo" / time.strftime("%Y%m%d-%H%M%S")
    lake_path = lake or str(out / "lake")
    telemetry = f"rebalance-lens-telemetry-{uuid.uuid4().hex[:6]}"
    console.rule("[bold]rebalance-lens demo")
    console.print(f"Output: {out}")
    with broker_for(bootstrap, Fallback.OWN, say=lambda line: console.print(line, markup=False)) as broker:
        runs = [(row, True) for row in matrix] + [(row, False) for row in plain]
        results = _play_matrix(console, runs, broker.bootstrap_servers, out, telemetry)
        console.print("\n[bold]Pipeline[/]: telemetry topic -> bronze -> validated -> silver -> gold -> "
                      "recommendations -> SQL marts (Delta); the broker's __consumer_offsets -> every group's history")
        config = PipelineConfig.resolve(bootstrap_servers=broker.bootstrap_servers, topic=telemetry,
                                        lake_path=lake_path, spark_master=master, broker_source="on",
                                        **(embedded_broker_groups() if broker.embedded else {}))
        gold, top = _run_pipeline(console, config)
    _print_costs(console, results, gold, top)
    report = write_report(lake_path, out, progress=lambda m: console.print(f"  {m}", markup=False, soft_wrap=True))
    console.print(f"\nReport: {report}\n        {report.resolve().as_uri()}\nDelta lake: {lake_path}\n"
                  f"Run folders (ground truth, manifests): {out / 'runs'}", markup=False, soft_wrap=True)
    console.print(f"Done in {time.monotonic() - started:.0f} s; "
                  f"{'broker, members' if broker.own else 'members'} and Spark stopped.")
    return 0
