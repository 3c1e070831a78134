"""What a small or quiet run costs, stage by stage: the fixed costs an hourly DAG pays every hour.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fixed_costs.py [--groups 2] [--baseline REV]

On an embedded broker and a fresh lake: ``--groups`` synthetic groups' telemetry (880 events
each: the size of a built-in scenario run or the demo's fleet) through every stage including
the SQL build; the same again with nothing new; then one new group's telemetry (an
incremental SQL build that touches one group). Each stage's seconds as ``pipeline run``
times them, each run's total beside the issue's target (2 cores), and each stage's cost model
(``pipelines.stage_costs``, this checkout's instrument whatever the code measured): its Spark
jobs, Delta commits, data files written and set-up time (to its first job), the kinds of job it
ran most, and the budgets of a run with little new data: at most one Delta commit per table a
stage writes and at most ``JOBS_BUDGET`` Spark jobs a stage.

``--baseline REV`` runs the same measurement on the commit REV first (a detached worktree
of this repository, its code imported instead of this checkout's) and prints both side by
side with their ratios: before and after in one run.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pipeline_throughput import bench_lake, produce

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("first run", "nothing new", "one new group")
TARGET_S = {("first run", "total"): 45.0, ("nothing new", "total"): 5.0, ("one new group", "sql"): 20.0}
LITTLE_NEW = ("nothing new", "one new group")  # the runs the budgets apply to
JOBS_BUDGET = 20  # Spark jobs a stage may run on little new data, however many groups the lake holds
KINDS_SHOWN = 4
DBT = "sql: dbt"  # the SQL stage's breakdown, from dbt's run_results.json (not a stage: no total counts it)
COSTS = "costs"  # each stage's cost model (pipelines.stage_costs.StageCost as a dict)


def instrument() -> Any:
    """This checkout's ``pipelines.stage_costs``, loaded from its file: the same instrument measures
    the baseline commit, whose tree may not have it (its imports resolve to the measured code's)."""
    spec = importlib.util.spec_from_file_location("lens_stage_costs", ROOT / "pipelines" / "stage_costs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are made
    spec.loader.exec_module(module)
    return module


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
    """Seconds and costs per stage of each of ``RUNS``, as ``pipeline run`` prints them (one lock
    and one migration check per run, then each stage's own time)."""
    from pipelines.sql_build import docs_path
    from pipelines.stages import run_pipeline

    stage_costs = instrument()

    def timed() -> dict[str, Any]:
        took: dict[str, Any] = {}  # seconds per stage, DBT: the SQL build's breakdown, COSTS: the cost models
        costs = stage_costs.StageCosts(spark, config.lake_path)

        def progress(message: str) -> None:
            if found := stage_costs.DONE.match(message):
                took[found[1]] = float(message.split(" done in ", 1)[1].split(" s", 1)[0])
        results = docs_path(config.lake_path) / "run_results.json"
        was = results.stat().st_mtime if results.exists() else None
        run_pipeline(spark, config, progress=costs.following(progress))
        if results.exists() and results.stat().st_mtime != was:  # a build ran (a skipped one writes nothing)
            took[DBT] = dbt_breakdown(results)
        # asdict copies a Counter by counting its (kind, n) pairs: the kinds as a plain dict instead
        took[COSTS] = {stage: {**dataclasses.asdict(cost), "job_kinds": dict(cost.job_kinds)}
                       for stage, cost in costs.costs.items()}
        return took

    with bench_lake(2, keep=False) as (bootstrap, topic, config, spark, _):
        n = produce(bootstrap, topic, groups, "small", seed=1)
        print(f"{n:,} events of {groups} group(s)", file=sys.stderr, flush=True)
        first = timed()
        quiet = timed()
        produce(bootstrap, topic, 1, "late", seed=2)
        return {"first run": first, "nothing new": quiet, "one new group": timed()}


def measure_at(rev: str, groups: int) -> dict[str, dict[str, Any]]:
    """``measure`` with the code of commit ``rev`` (a detached worktree sharing this checkout's jars)."""
    tree = Path(tempfile.mkdtemp(prefix="lens-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), rev], check=True)
    try:
        (tree / ".cache").symlink_to(ROOT / ".cache")
        out = subprocess.run([sys.executable, __file__, "--groups", str(groups), "--json"], cwd=tree, check=True,
                             env={**os.environ, "PYTHONPATH": str(tree)}, stdout=subprocess.PIPE, text=True)
        return json.loads(out.stdout)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def _stages(run: dict[str, Any]) -> dict[str, float]:
    return {stage: took for stage, took in run.items() if stage not in (DBT, COSTS)}


def _was_is(was: float | None, now: float, unit: str = " s", digits: int = 1) -> str:
    text = f"{now:6.{digits}f}{unit}"
    if was is None:
        return text
    return f"{was:6.{digits}f}{unit} -> {text}" + (f" ({now / was:.0%})" if was else "")


def show(now: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]] | None, label: str) -> None:
    for run in RUNS:
        stages = _stages(now[run])
        print(f"\n{run}:" + ("" if before is None else f"  ({label} -> this checkout)"))
        for stage, took in [*stages.items(), ("total", sum(stages.values()))]:
            was = None if before is None else (sum(_stages(before[run]).values()) if stage == "total"
                                               else before[run].get(stage))
            target = TARGET_S.get((run, stage))
            line = f"  {stage:>9}: {_was_is(was, took)}"
            if target is not None:
                line += f"   target <= {target:.0f} s: {'met' if took <= target else 'NOT met'}"
            print(line, flush=True)
            if stage in now[run].get(COSTS, {}):
                show_costs(run, now[run][COSTS][stage], None if before is None else before[run][COSTS].get(stage))
            if stage == "sql" and DBT in now[run]:
                d = now[run][DBT]
                print(f"             dbt: {d['elapsed']:.1f} s by its clock, {took - d['elapsed']:.1f} s before it "
                      f"(start, parse, tables registered); {d['models']:.0f} models {d['models_s']:.1f} s and "
                      f"{d['tests']:.0f} data tests {d['tests_s']:.1f} s summed over 4 threads", flush=True)


def show_costs(run: str, cost: dict[str, Any], was: dict[str, Any] | None) -> None:
    """A stage's cost model (before -> after), its budgets on a run with little new data, and its commonest jobs."""
    def of(key: str) -> float | None:
        return None if was is None else was[key]

    most = max(cost["commits"].values(), default=0)
    line = (f"             jobs {_was_is(of('jobs'), cost['jobs'], '', 0)}, Delta commits "
            f"{_was_is(None if was is None else sum(was['commits'].values()), sum(cost['commits'].values()), '', 0)}"
            f" in {len(cost['commits'])} tables, files {_was_is(of('files'), cost['files'], '', 0)}, set-up "
            f"{_was_is(of('setup_s'), cost['setup_s'])}, in jobs {cost['in_jobs_s']:.1f} s, driver "
            f"{max(0.0, cost['wall_s'] - cost['setup_s'] - cost['in_jobs_s']):.1f} s")
    if run in LITTLE_NEW:
        line += (f"   budgets: <= 1 commit a table {'met' if most <= 1 else 'NOT met'}, <= {JOBS_BUDGET} jobs "
                 f"{'met' if cost['jobs'] <= JOBS_BUDGET else 'NOT met'}")
    print(line, flush=True)
    kinds = sorted(cost["job_kinds"].items(), key=lambda kv: -kv[1])[:KINDS_SHOWN]
    if kinds and run in LITTLE_NEW:
        print("             most run: " + "; ".join(f"{n} x {kind}" for kind, n in kinds), flush=True)


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
