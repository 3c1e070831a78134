"""``rebalance-lens scenario list | run``: the fleet scenarios from the command line."""
from __future__ import annotations

import argparse
import signal
from pathlib import Path

from consumer_agent.contract import GROUP_PROTOCOLS
from lens_scenarios.consumer_config import ASSIGNORS, COMMIT_STYLES, assignor_for


def _cmd_list(_args: argparse.Namespace) -> int:
    """One entry per scenario, laid out to read in 80 columns: name and shape, then what it shows."""
    import textwrap

    from rich.console import Console
    from rich.markup import escape

    from lens_scenarios.spec import builtin_names, load

    console = Console(highlight=False)
    width = min(console.width, 100)
    for name in builtin_names():
        s = load(name)
        timeline = ", ".join(f"{a.kind}@{a.at_s:g}s" for a in s.timeline)
        console.print(f"[bold]{escape(name)}[/]  {len(s.members)} members, {s.partitions} partitions, "
                      f"{s.duration_s:g} s")
        console.print(escape(textwrap.fill(" ".join(s.description.split()), width, initial_indent="  ",
                                           subsequent_indent="  ")))
        console.print(escape(textwrap.fill(f"timeline: {timeline}", width, initial_indent="  ",
                                           subsequent_indent="    ")) + "\n", style="dim")
    console.print("Run one: rebalance-lens scenario run NAME [--assignor A] [--commit C]")
    return 0


def _raise_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def run_with_progress(scenario, options, console):
    """Run one scenario with a live progress bar (phase, records, members); returns the RunResult."""
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from lens_scenarios.runner import run_scenario

    columns = (TextColumn("[bold]{task.description}"), BarColumn(bar_width=16), TimeElapsedColumn(),
               TextColumn("{task.fields[stats]}"))
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(escape(scenario.name), total=scenario.duration_s, stats="")

        def show(p) -> None:
            bar.update(task, completed=p.elapsed_s, stats=escape(
                f"{p.phase}: {p.delivered:,} read, {p.members} members | {p.last_action}"))

        result = run_scenario(scenario, options, show)
        bar.update(task, completed=scenario.duration_s, stats="done")  # not the last thing it was doing
    s = result.truth.summary()
    console.print(f"  {s.records:,} records, {s.rebalances} rebalances, {s.duplicates:,} duplicates "
                  f"({escape(options.assignor)}, commit {escape(options.commit)})")
    return result


def _cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from lens_runtime.broker_choice import Fallback, broker_for
    from lens_scenarios.runner import RunOptions
    from lens_scenarios.spec import load

    scenario = load(args.scenario)
    assignor = assignor_for(args.assignor, args.protocol)
    # SIGTERM gets the same clean stop as Ctrl-C: the members are stopped before exit.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    console = Console()
    # No broker given or running: the local one is started and kept, for `pipeline run` to read.
    with broker_for(args.bootstrap, Fallback.LOCAL, say=lambda line: console.print(line, markup=False)) as broker:
        options = RunOptions(assignor=assignor, commit=args.commit, out_dir=Path(args.out),
                             bootstrap=broker.bootstrap_servers, **({"telemetry_topic": args.telemetry_topic}
                                                                    if args.telemetry_topic else {}))
        result = run_with_progress(scenario, options, console)
    s = result.truth.summary()
    console.print(
        f"[bold]{scenario.name}[/] {assignor}/{args.commit} in {result.wall_s:.1f} s: "
        f"records {s.records} (unique {s.unique_records}), duplicates by truth {s.duplicates} "
        f"({s.duplicates_in_timeline} during the timeline), rebalances {s.rebalances}, "
        f"partitions revoked {s.partitions_revoked}, handoffs {s.handoffs} (moved {s.moved_partitions}), "
        f"max pause {s.max_pause_s:.3f} s, total pause {s.total_pause_s:.3f} partition-s\n"
        f"run folder: {result.run_dir} (manifest.json, truth.json, truth/, logs/)")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    scenario = subparsers.add_parser("scenario", help="fleet scenarios with ground truth: list | run")
    actions = scenario.add_subparsers(dest="scenario_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the built-in scenarios")
    listing.set_defaults(func=_cmd_list)
    run = actions.add_parser("run", help="run a built-in scenario (by name) or your own scenario file")
    run.add_argument("scenario", metavar="NAME|FILE")
    run.add_argument("--assignor", choices=ASSIGNORS, default=None,
                     help="classic assignor, or 'consumer' for the KIP-848 protocol (default: range)")
    run.add_argument("--protocol", choices=GROUP_PROTOCOLS, default=None,
                     help="group protocol: classic (client-side assignor) or consumer (KIP-848, broker assigns)")
    run.add_argument("--commit", choices=COMMIT_STYLES, default="batch",
                     help="auto: enable.auto.commit; batch: commit every commit_batch_records records; "
                          "revoke: batch plus commit-on-revoke (default: batch)")
    run.add_argument("--out", default="scenario-runs", help="folder for run folders (default: ./scenario-runs)")
    run.add_argument("--bootstrap", default=None, metavar="HOST:PORT",
                     help="the Kafka cluster to run on (default: $LENS_KAFKA_BOOTSTRAP, else the broker of "
                          "`kafka up`, started if it is not running)")
    run.add_argument("--telemetry-topic", default=None, help="telemetry topic (default: rebalance-lens-telemetry)")
    run.set_defaults(func=_cmd_run)
