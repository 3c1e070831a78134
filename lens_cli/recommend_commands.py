"""``rebalance-lens recommend [--group G] [--json] | --verify SCENARIO``: what to change, and its proof.

Without ``--verify`` it prints the lake's ``gold/recommendations`` as a ranked table (or
JSON lines). With ``--verify`` it runs the closed loop (``lens_cli.closed_loop``) on a
built-in scenario or a scenario file: run, pipeline, recommend, apply, rerun, and the
predicted saving beside the measured one.
"""
from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path
from typing import Any

from lens_scenarios.consumer_config import ASSIGNORS, COMMIT_STYLES


def _saving(saved: float | None, pct: float | None, unit: str) -> str:
    if saved is None:
        return ""
    share = f" ({pct:.0f}%)" if pct is not None else ""
    return f"{saved:,.{0 if unit == 'records' else 1}f}{share}"


def print_table(rows: list[dict[str, Any]], console) -> None:
    from rich.table import Table

    table = Table("group", "#", "recommendation", "config change", "saves duplicates", "saves paused partition-s",
                  "confidence", title="Recommendations, best first per group (predicted over the observed window)",
                  show_lines=True)
    for r in rows:
        change = "\n".join(r["config_change"]) or "-"
        tradeoff = f"\ntrade-off: {r['tradeoff']}" if r["tradeoff"] else ""
        table.add_row(r["group_id"], str(r["rank"]), f"[bold]{r['title']}[/]\n{r['evidence'][0] if r['evidence'] else ''}"
                      f"{tradeoff}", change, _saving(r["duplicates_saved"], r["duplicates_saved_pct"], "records"),
                      _saving(r["pause_saved_s"], r["pause_saved_pct"], "s"), r["confidence"])
    console.print(table)


def _read(args: argparse.Namespace) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    from lens_runtime.errors import LensError
    from lens_runtime.spark_session import build_spark
    from pipelines import catalog, lake
    from pipelines.config import PipelineConfig

    config = PipelineConfig.resolve(lake_path=args.lake)
    spark = build_spark(config.spark_settings("rebalance-lens-recommend"))
    try:
        if not lake.exists(spark, config.lake_path, catalog.RECOMMENDATIONS):
            raise LensError(f"{config.lake_path} has no gold/recommendations yet: run `rebalance-lens pipeline run` "
                            "(its recommend stage writes them) or pass --lake")
        rows = lake.read(spark, config.lake_path, catalog.RECOMMENDATIONS)
        if args.group:
            rows = rows.where(F.col("group_id") == args.group)
        found = [r.asDict(recursive=True) for r in rows.orderBy("group_id", "rank").collect()]
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
    rows = _read(args)
    if args.json:
        for r in rows:
            print(json.dumps(r, default=str))
        return 0
    print_table(rows, Console())
    return 0


def print_verified(v, console) -> None:
    from rich.table import Table

    rec = v.recommendation
    console.print(f"\n[bold]{v.scenario}[/]: {rec['title']}\n  " + "\n  ".join(rec["config_change"]))
    table = Table("figure", "before (truth)", "after (truth)", "measured saving", "predicted saving", "holds",
                  title="Closed loop: predicted against measured (ground truth of both runs)")
    for check, before, after in zip(v.checks, (v.before.duplicates, v.before.pause_s), (v.after.duplicates, v.after.pause_s)):
        table.add_row(check.figure, f"{before:,.1f}", f"{after:,.1f}", f"{check.measured_saving:,.1f}",
                      f"{check.predicted_saving:,.1f}", "yes" if check.holds else "[red]no[/]")
    console.print(table)
    console.print(f"rerun folder: {v.rerun_dir}")


def _verify(args: argparse.Namespace) -> int:
    from rich.console import Console

    from lens_cli.closed_loop import pick, recommendations_of, rerun
    from lens_cli.scenario_commands import _assignor_for, run_with_progress
    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_runtime.paths import home
    from lens_runtime.spark_session import build_spark
    from lens_scenarios.runner import RunOptions
    from lens_scenarios.spec import load
    from pipelines.config import PipelineConfig, embedded_broker_groups
    from pipelines.stages import DATA_STAGES, run_pipeline

    console = Console()
    scenario = load(args.verify)
    out = Path(args.out) if args.out else home() / "verify" / uuid.uuid4().hex[:8]
    telemetry = f"rebalance-lens-verify-{uuid.uuid4().hex[:6]}"
    with EmbeddedKafka() as broker:
        options = RunOptions(assignor=_assignor_for(args.assignor, args.protocol), commit=args.commit,
                             out_dir=out / "runs", bootstrap=broker.bootstrap_servers, telemetry_topic=telemetry)
        console.print(f"[bold]1/3[/] {scenario.name} as it is")
        baseline = run_with_progress(scenario, options, console)
        console.print("[bold]2/3[/] pipeline and recommend")
        config = PipelineConfig.resolve(bootstrap_servers=broker.bootstrap_servers, topic=telemetry,
                                        lake_path=str(out / "lake"), **embedded_broker_groups())
        spark = build_spark(config.spark_settings("rebalance-lens-verify"))
        try:
            run_pipeline(spark, config, stages=DATA_STAGES, progress=lambda m: console.print(f"  {m}", markup=False))
            found = recommendations_of(spark, config.lake_path, baseline.manifest["group_id"])
        finally:
            spark.stop()
        print_table(found, console)
        rec, skipped = pick(found, scenario, options, args.kind)
        for reason in skipped:
            console.print(f"  passed over (a scenario run cannot apply it): {reason}", markup=False)
        console.print(f"[bold]3/3[/] {scenario.name} again with: {rec['title']}")
        verified = rerun(scenario, options, baseline, rec,
                         on_run=lambda s, o: run_with_progress(s, o, console))
    print_verified(verified, console)
    return 0 if verified.holds else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    rec = subparsers.add_parser("recommend", help="what to change per group, priced; --verify proves it by a rerun")
    rec.add_argument("--group", default=None, help="one group id (default: every group)")
    rec.add_argument("--json", action="store_true", help="one JSON object per recommendation instead of a table")
    rec.add_argument("--lake", default=None, help="Delta lake path (default: $LENS_LAKE or <home>/lake)")
    rec.add_argument("--verify", default=None, metavar="SCENARIO",
                     help="run this scenario, recommend, apply the top change, rerun, compare with ground truth")
    rec.add_argument("--kind", default=None, help="with --verify: verify the best change of this kind "
                     "(assignor, static_membership, commit_on_revoke, max_poll_interval, session_timeout)")
    rec.add_argument("--assignor", choices=ASSIGNORS, default=None, help="with --verify: the run's assignor")
    rec.add_argument("--protocol", choices=("classic", "consumer"), default=None, help="with --verify: group protocol")
    rec.add_argument("--commit", choices=COMMIT_STYLES, default="batch", help="with --verify: commit style")
    rec.add_argument("--out", default=None, help="with --verify: folder for the runs and the lake")
    rec.set_defaults(func=_cmd_recommend)
