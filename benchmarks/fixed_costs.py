"""What a small or quiet run costs, stage by stage: the fixed costs an hourly DAG pays every hour.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fixed_costs.py [--groups 2] [--baseline REV]

On an embedded broker and a fresh lake: ``--groups`` synthetic groups' telemetry (880 events
each: the size of a built-in scenario run or the demo's fleet) through every stage including
the SQL build; the same again with nothing new; then one new group's telemetry (an
incremental SQL build that touches one group). Each stage's seconds as ``pipeline run``
times them, each run's total beside the issue's target (2 cores).

``--baseline REV`` runs the same measurement on the commit REV first (a detached worktree
of this repository, its code imported instead of this checkout's) and prints both side by
side with their ratios: before and after in one run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pipeline_throughput import bench_lake, produce

RUNS = ("first run", "nothing new", "one new group")
TARGET_S = {("first run", "total"): 45.0, ("nothing new", "total"): 15.0, ("one new group", "sql"): 20.0}


DONE = re.compile(r"^\[(\w+)\] done in ([0-9.]+) s")
DBT = "sql: dbt"  # the SQL stage's breakdown, from dbt's run_results.json (not a stage: no total counts it)


def dbt_breakdown(run_results: Path) -> dict[str, float]:
    """Where a SQL build's time went, by dbt's own clock: its elapsed time and the summed
    execution times of its models and of its data tests (4 threads: sums exceed the elapsed);
    the stage's time beyond ``elapsed`` is dbt's start and parse and the tables' registration."""
    results = json.loads(run_results.read_text())
    nodes = results["results"]
    of = {kind: [n["execution_time"] for n in nodes if n["unique_id"].startswith(f"{kind}.")]
          for kind in ("model", "test")}
    return {"elapsed": results["elapsed_time"], "models": len(of["model"]), "models_s": sum(of["model"]),
            "tests": len(of["test"]), "tests_s": sum(of["test"])}


def measure(groups: int) -> dict[str, dict[str, Any]]:
    """Seconds per stage of each of ``RUNS``, as ``pipeline run`` prints them (one lock and one
    migration check per run, then each stage's own time)."""
    from pipelines.sql_build import docs_path
    from pipelines.stages import run_pipeline

    def timed() -> dict[str, Any]:
        took: dict[str, Any] = {}  # seconds per stage, and DBT: the SQL build's breakdown

        def progress(message: str) -> None:
            if found := DONE.match(message):
                took[found[1]] = float(found[2])
        results = docs_path(config.lake_path) / "run_results.json"
        was = results.stat().st_mtime if results.exists() else None
        run_pipeline(spark, config, progress=progress)
        if results.exists() and results.stat().st_mtime != was:  # a build ran (a skipped one writes nothing)
            took[DBT] = dbt_breakdown(results)
        return took

    with bench_lake(2, keep=False) as (bootstrap, topic, config, spark, _):
        n = produce(bootstrap, topic, groups, "small", seed=1)
        print(f"{n:,} events of {groups} group(s)", file=sys.stderr, flush=True)
        first = timed()
        quiet = timed()
        produce(bootstrap, topic, 1, "late", seed=2)
        return {"first run": first, "nothing new": quiet, "one new group": timed()}


def measure_at(rev: str, groups: int) -> dict[str, dict[str, float]]:
    """``measure`` with the code of commit ``rev`` (a detached worktree sharing this checkout's jars)."""
    root = Path(__file__).resolve().parents[1]
    tree = Path(tempfile.mkdtemp(prefix="lens-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(root), "worktree", "add", "-q", "--detach", str(tree), rev], check=True)
    try:
        (tree / ".cache").symlink_to(root / ".cache")
        out = subprocess.run([sys.executable, __file__, "--groups", str(groups), "--json"], cwd=tree, check=True,
                             env={**os.environ, "PYTHONPATH": str(tree)}, stdout=subprocess.PIPE, text=True)
        return json.loads(out.stdout)
    finally:
        subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(tree)], check=False)


def show(now: dict[str, dict[str, float]], before: dict[str, dict[str, float]] | None, label: str) -> None:
    for run in RUNS:
        stages = {stage: took for stage, took in now[run].items() if stage != DBT}
        print(f"\n{run}:" + ("" if before is None else f"  ({label} -> this checkout)"))
        for stage, took in [*stages.items(), ("total", sum(stages.values()))]:
            was = None if before is None else (sum(v for k, v in before[run].items() if k != DBT) if stage == "total"
                                               else before[run][stage])
            target = TARGET_S.get((run, stage))
            line = f"  {stage:>9}: " + ("" if was is None else f"{was:6.1f} s -> ") + f"{took:6.1f} s"
            if was:
                line += f" ({took / was:.0%})"
            if target is not None:
                line += f"   target <= {target:.0f} s: {'met' if took <= target else 'NOT met'}"
            print(line, flush=True)
            if stage == "sql" and DBT in now[run]:
                d = now[run][DBT]
                print(f"             dbt: {d['elapsed']:.1f} s by its clock, {took - d['elapsed']:.1f} s before it "
                      f"(start, parse, tables registered); {d['models']:.0f} models {d['models_s']:.1f} s and "
                      f"{d['tests']:.0f} data tests {d['tests_s']:.1f} s summed over 4 threads", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2, help="synthetic groups in the first run (880 events each)")
    parser.add_argument("--baseline", metavar="REV", help="also measure commit REV first, and print both")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one side, for --baseline
    args = parser.parse_args()
    before = measure_at(args.baseline, args.groups) if args.baseline else None
    now = measure(args.groups)
    if args.json:
        print(json.dumps(now))
        return
    show(now, before, args.baseline or "")


if __name__ == "__main__":
    main()
