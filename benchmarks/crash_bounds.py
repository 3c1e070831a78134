"""Crash bounds and estimates against ground truth: every crash handoff's duplicates and pause, truth
beside gold's range and most likely figure, and (``--before REF``) beside the range an older gold drew
from the same telemetry.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/crash_bounds.py [--keep DIR] [--before REF]
        [--progress-interval-ms MS]

Runs the built-in ``crash`` and ``turbulent-minute`` scenarios and the crash fleets beside this
script (``crash_fleets/*.yaml``: several crashes, hot and cold partitions, a member killed about
as soon as it is assigned) on one embedded broker, all into one telemetry topic, then the
pipeline once. For every handoff whose previous owner was killed (truth's ``killed``), it prints
the true duplicates and pause beside gold's ``[figure, _upper]`` and each range's width, whether
the truth is inside (pauses within gold_matching's 0.1 s, as the e2e tests hold them; ``no
tick``: the crashed owner had sent no progress for the partition), and gold's estimate
(``duplicates_estimate``, ``pause_estimate_s``) with its error and interval. ``--before REF``:
also the bounds of ``pipelines/gold/handoffs.py`` as it was at git commit REF, computed from the
same ownership intervals (so the side by side is what the handoff arithmetic changed; what the
agents' ticks changed shows in the ``no tick`` rows of a run of the older agents). Then a summary:
truth inside, widths per partition rate (busy: 100 records/s or more), the estimate's errors.
A crashed owner that never delivered a record is no handoff in truth (its partitions pass from
the owner before it), so gold's crash handoffs that match no truth handoff are counted apart.
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import tempfile
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from lens_scenarios.consumer_config import PROGRESS_INTERVAL_MS
from tests.support.gold_matching import TOLERANCE_S, gold_for_run, matched

BENCH_DIR = Path(__file__).resolve().parent
RUNS = (("crash", "range"), ("turbulent-minute", "cooperative-sticky"),
        (str(BENCH_DIR / "crash_fleets" / "hot-cold-crashes.yaml"), "range"),
        (str(BENCH_DIR / "crash_fleets" / "restart-crashes.yaml"), "roundrobin"))
DUPLICATES_FLOOR, PAUSE_FLOOR_S, SHARE = 50, 2.0, 0.25
BUSY_PER_S = 100  # records per second a partition gets from its producer: busy at this rate or more


@dataclass(frozen=True)
class Bound:
    """One figure of one handoff: the truth and gold's range (inside within ``tolerance``: truth's
    pause is timed on the members' clocks, gold's on the events', to the millisecond)."""

    truth: float
    lower: float | None
    upper: float | None
    floor: float
    tolerance: float = 0.0

    @property
    def width(self) -> float | None:
        return None if self.lower is None or self.upper is None else self.upper - self.lower

    @property
    def target(self) -> float:
        return max(SHARE * self.truth, self.floor)

    @property
    def inside(self) -> bool:
        return (self.lower is not None and self.upper is not None
                and self.lower - self.tolerance <= self.truth <= self.upper + self.tolerance)

    @property
    def on_target(self) -> bool:
        return self.width is not None and self.width <= self.target

    def cell(self, unit: str) -> str:
        width = "-" if self.width is None else f"{self.width:g}"
        return (f"{self.truth:g}{unit} in [{self.lower}, {self.upper}] {'ok' if self.inside else 'OUTSIDE'}, "
                f"width {width} / {self.target:g} {'ok' if self.on_target else 'WIDE'}")


def land(keep: Path | None, progress_interval_ms: int) -> dict[str, Any]:
    """Every run on one embedded broker and one telemetry topic, then the pipeline: gold's handoffs
    and each agent's client id (what gold_matching keys the handoffs by), and each run's truth."""
    from pyspark.sql import functions as F

    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_runtime.spark_session import build_spark
    from lens_scenarios.runner import RunOptions, run_scenario
    from lens_scenarios.spec import load
    from pipelines import catalog, lake
    from pipelines.config import PipelineConfig, embedded_broker_groups
    from pipelines.stages import run_pipeline

    work = keep or Path(tempfile.mkdtemp(prefix="lens-crash-bounds-"))
    telemetry = f"crash-bounds-{uuid.uuid4().hex[:6]}"
    try:
        with EmbeddedKafka() as broker:
            runs = {}
            for name, assignor in RUNS:
                scenario = load(name)
                print(f"running {scenario.name} ({assignor}) ...", flush=True)
                runs[scenario.name] = run_scenario(scenario, RunOptions(
                    assignor=assignor, out_dir=work / "runs", bootstrap=broker.bootstrap_servers,
                    telemetry_topic=telemetry, progress_interval_ms=progress_interval_ms))
            config = PipelineConfig(bootstrap_servers=broker.bootstrap_servers, topic=telemetry,
                                    lake_path=str(work / "lake"), **embedded_broker_groups())
            spark = build_spark(config.spark_settings("crash-bounds"))
            try:
                print("running the pipeline ...", flush=True)
                run_pipeline(spark, config, progress=lambda _m: None, stages=("ingest", "validate", "silver", "gold"))
                handoffs = [r.asDict() for r in lake.read(spark, config.lake_path, catalog.HANDOFFS).collect()]
                intervals = [r.asDict() for r in lake.read(spark, config.lake_path, catalog.OWNERSHIP).collect()]
                ticked = {(r.assign_event_id, r.topic, r.partition) for r in
                          lake.read(spark, config.lake_path, catalog.OWNERSHIP).where("last_progress_ms is not null")
                          .select("assign_event_id", "topic", "partition").collect()}
                events = lake.read(spark, config.lake_path, catalog.EVENTS)
                clients = {r.agent_id: r.client_id for r in events.select("agent_id", "client_id").distinct().collect()}
                # how long a tick took to be produced (the Kafka timestamp is the producer's, at produce())
                delays = [r.ms for r in events.where("kind = 'progress'").select(
                    (F.unix_millis("kafka_timestamp") - F.col("event_time_ms")).alias("ms")).collect()]
            finally:
                spark.stop()
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    rates = {f"{run.manifest['run_id']}": _rates(load(name)) for (name, _), run in zip(RUNS, runs.values())}
    return {"runs": runs, "handoffs": handoffs, "clients": clients, "ticked": ticked, "intervals": intervals,
            "rates": rates, "send_delays_ms": delays}


def _rates(scenario: Any) -> dict[str, float]:
    """Records per second each of the scenario's topics gets per partition, by topic name."""
    return {t.name: t.rate_per_partition or scenario.rate_per_partition for t in scenario.topics}


def older_handoffs(ref: str) -> ModuleType:
    """``pipelines/gold/handoffs.py`` as it was at git commit ``ref``, as a module of its own."""
    source = subprocess.run(["git", "show", f"{ref}:pipelines/gold/handoffs.py"], cwd=BENCH_DIR.parent, check=True,
                            capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(f"handoffs_at_{ref}", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"{ref}:pipelines/gold/handoffs.py", "exec"), module.__dict__)
    return module


def before_landed(landed: dict[str, Any], module: ModuleType) -> dict[str, Any]:
    """``landed`` with its handoffs drawn by ``module`` (an older ``handoffs.py``) from the same intervals."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in landed["intervals"]:
        groups[(row["cluster_id"], row["group_id"])].append(dict(row))
    return {**landed, "handoffs": [h for rows in groups.values() for h in module.handoffs_of(rows)]}


@dataclass(frozen=True)
class Row:
    """One crash handoff: where, its partition's rate, the figures now and (``before``) an older gold's."""

    where: str
    rate: float
    dups: Bound
    pause: Bound
    before: tuple[Bound, Bound] | None
    estimate: tuple[float | None, float | None]  # duplicates, pause
    intervals: str

    @property
    def busy(self) -> bool:
        return self.rate >= BUSY_PER_S


def _bounds(truth: Any, g: dict[str, Any]) -> tuple[Bound, Bound]:
    return (Bound(truth.duplicates, g["duplicates"], g["duplicates_upper"], DUPLICATES_FLOOR),
            Bound(round(truth.pause_s, 3), g["pause_s"], g["pause_upper_s"], PAUSE_FLOOR_S, TOLERANCE_S))


def _error(estimate: float | None, truth: float) -> str:
    if estimate is None:
        return "no estimate"
    off = estimate - truth
    return f"{estimate:g} ({off:+g}{f', {off / truth:+.0%}' if truth else ''})"


def _rows(landed: dict[str, Any], before: dict[str, Any] | None) -> tuple[list[Row], int, int]:
    """Every crash handoff of truth with its gold rows (printed as it goes); the counts of truth handoffs
    without gold and of gold crash handoffs without truth."""
    rows, unmatched, missing = [], 0, 0
    for name, run in landed["runs"].items():
        run_id = run.manifest["run_id"]
        gold = gold_for_run(landed, run_id)
        older = dict(matched(run.truth.handoffs, gold_for_run(before, run_id))) if before else {}
        crash_gold = sum(1 for hs in gold.values() for h in hs if h["release_kind"] == "crash")
        pairs = [(t, g) for t, g in matched(run.truth.handoffs, gold) if t.released_by == "killed"]
        unmatched += crash_gold - sum(1 for _t, g in pairs if g is not None and g["release_kind"] == "crash")
        print(f"\n== {name}: {len(pairs)} crash handoffs in truth, {crash_gold} in gold")
        for truth, g in pairs:
            where = f"{truth.topic.split('-', 2)[-1]}/{truth.partition} {truth.prev_process}->{truth.next_process}"
            if g is None:
                missing += 1
                print(f"  {where}: no gold handoff")
                continue
            prev = (g["handoff_id"].split(">", 1)[0], g["topic"], g["partition"])
            row = Row(where + ("" if prev in landed["ticked"] else " (no tick)"),
                      landed["rates"][run_id][truth.topic.split("-", 2)[-1]], *_bounds(truth, g),
                      _bounds(truth, older[truth]) if older.get(truth) else None,
                      (g.get("duplicates_estimate"), g.get("pause_estimate_s")),
                      f"[{g.get('duplicates_estimate_low')}, {g.get('duplicates_estimate_high')}], "
                      f"[{g.get('pause_estimate_low_s')}, {g.get('pause_estimate_high_s')}] s")
            rows.append(row)
            _print_row(row, truth)
    return rows, missing, unmatched


def _print_row(row: Row, truth: Any) -> None:
    print(f"  {row.where}, {row.rate:g} records/s")
    for label, bound, unit, i in (("duplicates", row.dups, "", 0), ("pause", row.pause, " s", 1)):
        print(f"    {label:10} {bound.cell(unit)}")
        if row.before:
            print(f"    {'  before':10} {row.before[i].cell(unit)}")
    print(f"    estimate   duplicates {_error(row.estimate[0], truth.duplicates)}, "
          f"pause {_error(row.estimate[1], round(truth.pause_s, 3))} s; intervals {row.intervals}")


def _within(rows: list[Row], share: float) -> int:
    return sum(1 for r in rows if r.estimate[0] is not None
               and abs(r.estimate[0] - r.dups.truth) <= share * r.dups.truth)


def _summary(rows: list[Row]) -> None:
    """Truth inside, widths by partition rate (now, and before where drawn), the estimate's errors."""
    figures = [b for r in rows for b in (r.dups, r.pause)]
    older = [b for r in rows if r.before for b in r.before]
    print(f"\nSUMMARY: {len(rows)} crash handoffs; truth inside {sum(b.inside for b in figures)}/{len(figures)} "
          f"bounds" + (f" (before: {sum(b.inside for b in older)}/{len(older)})" if older else ""))
    for label, group in (("busy (>= 100 records/s)", [r for r in rows if r.busy]),
                         ("others", [r for r in rows if not r.busy])):
        widths = [r.dups.width for r in group if r.dups.width is not None]
        line = f"  {label}: {len(group)} handoffs, duplicates widths {sorted(widths)}"
        pairs = [(r.before[0].width, r.dups.width) for r in group if r.before and r.before[0].width and r.dups.width]
        if pairs:
            halved = sum(1 for b, a in pairs if a <= b / 2)
            line += (f"; before {sorted(b for b, _ in pairs)}; sum {sum(a for _, a in pairs):g} vs "
                     f"{sum(b for b, _ in pairs):g} ({sum(a for _, a in pairs) / sum(b for b, _ in pairs):.0%}), "
                     f"halved on {halved}/{len(pairs)}")
        print(line)
    estimated = [r for r in rows if r.estimate[0] is not None]
    errors = sorted(abs(r.estimate[0] - r.dups.truth) / r.dups.truth for r in estimated if r.dups.truth)
    print(f"  estimate: {len(estimated)}/{len(rows)} handoffs have one; within 10% {_within(rows, 0.10)}, "
          f"25% {_within(rows, 0.25)}, 50% {_within(rows, 0.5)} of {len(rows)} (an estimate of 0 exact when truth "
          f"is 0); median error {statistics.median(errors) if errors else 0:.0%}; summed: "
          f"{sum(r.estimate[0] for r in estimated):g} estimated vs {sum(r.dups.truth for r in estimated):g} true")


def report(landed: dict[str, Any], before_ref: str | None = None) -> bool:
    """Print every crash handoff against truth and a summary; True when every truth is inside its bounds."""
    before = before_landed(landed, older_handoffs(before_ref)) if before_ref else None
    rows, missing, unmatched = _rows(landed, before)
    print(f"\n{missing} crash handoffs of truth without gold, {unmatched} gold crash handoffs without truth")
    delays = sorted(landed.get("send_delays_ms") or [0])
    print(f"progress ticks from the tick to their produce() call: median {statistics.median(delays):g} ms, "
          f"99th percentile {delays[int(0.99 * (len(delays) - 1))]:g} ms, most {delays[-1]:g} ms "
          f"(of {len(delays)}; the send allowance, gold.handoffs.SEND_ALLOWANCE_MS, adds the linger and a round trip)")
    _summary(rows)
    return all(b.inside for r in rows for b in (r.dups, r.pause)) and missing == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the runs and the lake in this folder")
    parser.add_argument("--before", metavar="REF", help="also the bounds pipelines/gold/handoffs.py drew at this "
                                                        "git commit, from the same ownership intervals")
    parser.add_argument("--progress-interval-ms", type=int, default=PROGRESS_INTERVAL_MS,
                        help="the members' lens.progress.interval.ms (default: the scenarios' 1000)")
    args = parser.parse_args()
    if args.before:
        older_handoffs(args.before)  # a bad REF fails before the runs
    raise SystemExit(0 if report(land(args.keep, args.progress_interval_ms), args.before) else 1)


if __name__ == "__main__":
    main()
