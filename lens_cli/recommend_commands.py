"""``rebalance-lens recommend [--group G] [--json] | --verify SCENARIO``: what to change, and its proof.

Without ``--verify`` it prints the lake's ``gold/recommendations`` as a ranked table (or
JSON lines). With ``--verify`` it runs the closed loop on a built-in scenario or a scenario
file: run, pipeline, recommend, apply, rerun, and the predicted saving beside the measured one.
The runs are ``lens_scenarios.rerun``'s; the judgement and its record in the lake are
``pipelines.recommend.closed_loop``'s; this module parses and prints.
"""
from __future__ import annotations

import argparse
import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from consumer_agent.contract import GROUP_PROTOCOLS
from lens_runtime.errors import LensError
from lens_scenarios.consumer_config import ASSIGNORS, CLASSIC_HEARTBEAT_MS, COMMIT_STYLES
from pipelines.vocabulary import RECOMMENDATION_KINDS, VERIFIABLE_KINDS


def saving_words(saved: float | None, pct: float | None, unit: str, spec: str) -> str:
    """``saves 94 (100%) duplicates``, or ``costs 0.3 (18%) more paused partition-s``."""
    if saved is None:
        return ""
    share = f" ({abs(pct):.0f}%)" if pct is not None else ""
    return f"saves {saved:{spec}}{share} {unit}" if saved >= 0 else f"costs {-saved:{spec}}{share} more {unit}"


def predicted_effects(r: dict[str, Any]) -> list[str]:
    """A recommendation's predicted effect on duplicates and on the pause, in words."""
    return [saving_words(r["predicted_duplicates_saved"], r.get("predicted_duplicates_saved_pct"), "duplicates",
                         ",.0f"),
            saving_words(r["predicted_pause_saved_s"], r.get("predicted_pause_saved_pct"), "paused partition-s",
                         ",.1f")]


def print_table(rows: list[dict[str, Any]], console) -> None:
    """The recommendations, best first per group, one block each: reads in 80 columns. A group is
    (cluster_id, group_id): its cluster is named when another cluster has a group of that name."""
    from rich.markup import escape

    console.print("[bold]Recommendations[/], best first per group (savings predicted over the observed window)")
    names = Counter(name for _cluster, name in {(r["cluster_id"], r["group_id"]) for r in rows})
    group = None
    for r in rows:
        if (r["cluster_id"], r["group_id"]) != group:
            group = (r["cluster_id"], r["group_id"])
            cluster = f" (cluster {escape(group[0] or 'not reported')})" if names[group[1]] > 1 else ""
            console.print(f"\n[bold]group {escape(group[1])}{cluster}[/]")
        saving = ", ".join(e for e in predicted_effects(r) if e)
        saving = f"; {saving}" if saving else ""
        console.print(f"  {r['rank']}. [bold]{escape(r['title'])}[/] ({escape(r['confidence'])} confidence){saving}")
        for line in r["config_change"]:
            console.print(f"       {escape(line)}", style="cyan")
        if r["evidence"]:
            console.print(f"     why: {escape(r['evidence'][0])}")
        if r["tradeoff"]:
            console.print(f"     trade-off: {escape(r['tradeoff'])}")


def _read(args: argparse.Namespace, console) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    from lens_cli.live_spark import start_spark
    from lens_runtime.errors import LensError
    from pipelines import catalog, lake
    from pipelines.config import PipelineConfig

    config = PipelineConfig.resolve(lake_path=args.lake)
    missing = LensError(f"{config.lake_path} has no gold/recommendations yet: run `rebalance-lens pipeline run` "
                        "(its recommend stage writes them) or pass --lake")
    if lake.missing_locally(config.lake_path, catalog.RECOMMENDATIONS):
        raise missing
    spark = start_spark(config.spark_settings("rebalance-lens-recommend"), console)
    try:
        if not lake.exists(spark, config.lake_path, catalog.RECOMMENDATIONS):
            raise missing
        rows = lake.read(spark, config.lake_path, catalog.RECOMMENDATIONS)
        if args.group:
            rows = rows.where(F.col("group_id") == args.group)
        found = [r.asDict(recursive=True) for r in rows.orderBy("group_id", "cluster_id", "rank").collect()]
    finally:
        spark.stop()
    if args.group and not found:
        raise LensError(f"no recommendation for group {args.group!r} in {config.lake_path}: check the group id "
                        "(`rebalance-lens recommend` lists every group)")
    return found


def _cmd_recommend(args: argparse.Namespace) -> int:
    from rich.console import Console

    if args.verify:
        return _verify(args)
    console = Console(highlight=False, stderr=args.json)  # JSON lines alone on stdout
    rows = _read(args, console)
    if args.json:
        for r in rows:
            print(json.dumps(r, default=str))
        return 0
    print_table(rows, console)
    return 0


def _measured(check, spec: str) -> str:
    """A measured figure, with its standard error when it is the mean of several reruns."""
    return format(check.measured_saving, spec) + (f" ± {check.standard_error:{spec}}" if check.standard_error else "")


def _holds(check, reruns: int) -> str:
    """The verdict; a miss within the reruns' noise says how many reruns would decide it."""
    if check.holds:
        return "yes"
    needed = check.reruns_to_decide(reruns)
    return "[red]no[/]" if needed is None else f"[red]no[/]: within the noise; ~{needed:,} reruns decide"


def print_verified(v, console) -> None:
    from rich.table import Table

    from rich.markup import escape

    rec = v.recommendation
    console.print(f"\n[bold]{escape(v.scenario)}[/]: {escape(rec['title'])}\n  "
                  + "\n  ".join(escape(line) for line in rec["config_change"]))
    over = f"the mean of {v.reruns} reruns, ± its standard error" if v.reruns > 1 else "one rerun"
    table = Table("figure", "before", "after", "saved:\nmeasured", "saved:\npredicted", "holds",
                  title=f"Closed loop: predicted against measured (ground truth; {over})")
    table.columns[0].no_wrap = True
    savings, mixed = v.checks[:2], v.checks[2:]
    befores, afters = (v.before.duplicates, v.before.pause_s), (v.after.duplicates, v.after.pause_s)
    for check, before, after in zip(savings, befores, afters):
        spec = ",.0f" if check.figure == "duplicates" else ",.1f"
        table.add_row(check.figure, format(before, spec), format(after, spec), _measured(check, spec),
                      format(check.predicted_saving, spec), _holds(check, v.reruns))
    console.print(table)
    if mixed:  # a staged migration: what its mixed phase cost, predicted against measured
        phase = Table("figure", "measured", "predicted", "holds",
                      title="The migration's mixed phase (its own handoffs)")
        for check in mixed:
            spec = ",.0f" if "duplicates" in check.figure else ",.1f"
            phase.add_row(check.figure, _measured(check, spec), format(check.predicted_saving, spec),
                          _holds(check, v.reruns))
        console.print(phase)
    console.print(f"rerun folder: {v.rerun_dir}")


def _verify_options(args: argparse.Namespace, broker, out: Path):
    """The lake's settings and the runs' options of a check: its own telemetry topic and lake under
    ``out``, on ``broker`` (the embedded one's KIP-848 group timings when it is ours)."""
    from lens_scenarios.consumer_config import assignor_for
    from lens_scenarios.runner import RunOptions
    from pipelines.config import PipelineConfig, embedded_broker_groups

    telemetry = f"rebalance-lens-verify-{uuid.uuid4().hex[:6]}"
    config = PipelineConfig.resolve(bootstrap_servers=broker.bootstrap_servers, topic=telemetry,
                                    lake_path=str(out / "lake"),
                                    **(embedded_broker_groups() if broker.embedded else {}))
    # every run's changes at a random point of the members' heartbeat cycles: each run an
    # independent draw of what the model prices (lens_scenarios.timeline)
    jitter_s = max(CLASSIC_HEARTBEAT_MS, config.kip848_heartbeat_ms) / 1000
    options = RunOptions(assignor=assignor_for(args.assignor, args.protocol), commit=args.commit,
                         out_dir=out / "runs", bootstrap=broker.bootstrap_servers, telemetry_topic=telemetry,
                         phase_jitter_s=jitter_s)
    return config, options


def _check(args: argparse.Namespace, spark, config, scenario, options, baseline, console):
    """The pipeline and recommend over the run, the recommendation to check (a plan step from the step
    before it, a move to KIP-848 staged as it would roll out), its reruns and their judgement."""
    from rich.markup import escape

    from lens_cli.live_spark import run_stages
    from lens_cli.scenario_commands import run_with_progress
    from lens_scenarios.rerun import PLAN_KINDS, pick, previous_step, rerun, target_of
    from pipelines.recommend.closed_loop import VERIFIABLE, judge, recommendations_of
    from pipelines.stages import DATA_STAGES

    run_stages(spark, config, DATA_STAGES, console)
    found = recommendations_of(spark, config.lake_path, baseline.manifest["group_id"])
    print_table(found, console)
    rec, skipped = pick(found, scenario, options, VERIFIABLE, args.kind, args.step)
    for reason in skipped:
        console.print(f"  passed over (a scenario run cannot apply it): {reason}", markup=False)
    console.print(f"[bold]3/4[/] {escape(scenario.name)} again with: {escape(rec['title'])}")
    source = previous_step(found, rec) if rec["kind"] in PLAN_KINDS else None
    checked = rerun(scenario, options, baseline, rec, source and target_of(source),
                    on_run=lambda s, o: run_with_progress(s, o, console), times=args.reruns)
    return judge(rec, checked)


def _verify(args: argparse.Namespace) -> int:
    """The closed loop; the check is kept in the lake, and the run's report shows it."""
    from rich.console import Console
    from rich.markup import escape

    from lens_cli.live_spark import run_stages, start_spark
    from lens_cli.scenario_commands import run_with_progress
    from lens_runtime.broker_choice import Fallback, broker_for
    from lens_runtime.paths import home
    from lens_scenarios.spec import load
    from pipelines.recommend.closed_loop import record
    from tuning_report import write_report

    if args.reruns < 1:
        raise LensError(f"--reruns {args.reruns}: a check needs at least one rerun; pass --reruns 1 or more")
    console = Console(highlight=False)
    scenario = load(args.verify)
    out = Path(args.out) if args.out else home() / "verify" / uuid.uuid4().hex[:8]
    with broker_for(args.bootstrap, Fallback.OWN, say=lambda line: console.print(line, markup=False)) as broker:
        config, options = _verify_options(args, broker, out)
        console.print(f"[bold]1/4[/] {escape(scenario.name)} as it is")
        baseline = run_with_progress(scenario, options, console)
        console.print("[bold]2/4[/] pipeline and recommend")
        spark = start_spark(config.spark_settings("rebalance-lens-verify"), console)
        try:
            verified = _check(args, spark, config, scenario, options, baseline, console)
            console.print("[bold]4/4[/] the check kept in the lake, the SQL marts and the report")
            record(spark, config.lake_path, verified, config.lock_wait_s)
            run_stages(spark, config, ["sql"], console)
        finally:
            spark.stop()
    print_verified(verified, console)
    report = write_report(config.lake_path, out, progress=lambda m: console.print(f"  {m}", markup=False))
    console.print(f"report: {report}\n        {report.resolve().as_uri()}", markup=False)
    return 0 if verified.holds else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    rec = subparsers.add_parser("recommend", help="what to change per group, priced; --verify proves it by a rerun")
    rec.add_argument("--group", default=None, help="one group id (default: every group)")
    rec.add_argument("--json", action="store_true", help="one JSON object per recommendation instead of a table")
    rec.add_argument("--lake", default=None, help="Delta lake path (default: $LENS_LAKE or <home>/lake)")
    rec.add_argument("--verify", default=None, metavar="SCENARIO",
                     help="run this scenario, recommend, apply the top change, rerun, compare with ground truth")
    rec.add_argument("--kind", choices=VERIFIABLE_KINDS, default=None,
                     help="with --verify: verify the best change of this kind ("
                     + "; ".join(f"{k.name}: {k.about}" for k in RECOMMENDATION_KINDS if k.rerun_checks) + ")")
    rec.add_argument("--step", type=int, default=None, metavar="N",
                     help="with --verify: verify step N of the staged plan (from the step before it)")
    rec.add_argument("--reruns", type=int, default=1, metavar="N",
                     help="with --verify: run the change N times (and a plan step's previous step as often) and "
                          "check the mean: one run is one draw (default 1)")
    rec.add_argument("--assignor", choices=ASSIGNORS, default=None, help="with --verify: the run's assignor")
    rec.add_argument("--protocol", choices=GROUP_PROTOCOLS, default=None, help="with --verify: group protocol")
    rec.add_argument("--commit", choices=COMMIT_STYLES, default="batch", help="with --verify: commit style")
    rec.add_argument("--out", default=None, help="with --verify: folder for the runs and the lake")
    rec.add_argument("--bootstrap", default=None, metavar="HOST:PORT",
                     help="with --verify: the Kafka cluster to run on (default: $LENS_KAFKA_BOOTSTRAP, else the "
                          "broker of `kafka up`, else one started for this command)")
    rec.set_defaults(func=_cmd_recommend)
