"""Crash bounds against ground truth: every crash handoff's duplicates and pause, truth beside gold's range.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/crash_bounds.py [--keep DIR]

Runs the built-in ``crash`` and ``turbulent-minute`` scenarios and the crash fleets beside this
script (``crash_fleets/*.yaml``: several crashes, hot and cold partitions, a member killed about
as soon as it is assigned) on one embedded broker, all into one telemetry topic, then the
pipeline once. For every handoff whose previous owner was killed (truth's ``killed``), it prints
the true duplicates and pause beside gold's ``[figure, _upper]``, each range's width against
the target (at most 25% of the truth, or 50 records / 2 partition-seconds, whichever is larger)
and whether the truth is inside (pauses within gold_matching's 0.1 s, as the e2e tests hold
them; ``no tick``: the crashed owner had sent no progress for the
partition); then one summary line. A crashed owner that never delivered a
record is no handoff in truth (its partitions pass from the owner before it), so gold's crash
handoffs that match no truth handoff are counted apart.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RUNS = (("crash", "range"), ("turbulent-minute", "cooperative-sticky"),
        (str(BENCH_DIR / "crash_fleets" / "hot-cold-crashes.yaml"), "range"),
        (str(BENCH_DIR / "crash_fleets" / "restart-crashes.yaml"), "roundrobin"))
DUPLICATES_FLOOR, PAUSE_FLOOR_S, SHARE = 50, 2.0, 0.25


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


def land(keep: Path | None) -> dict[str, Any]:
    """Every run on one embedded broker and one telemetry topic, then the pipeline: gold's handoffs
    and each agent's client id (what gold_matching keys the handoffs by), and each run's truth."""
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
                    telemetry_topic=telemetry))
            config = PipelineConfig(bootstrap_servers=broker.bootstrap_servers, topic=telemetry,
                                    lake_path=str(work / "lake"), **embedded_broker_groups())
            spark = build_spark(config.spark_settings("crash-bounds"))
            try:
                print("running the pipeline ...", flush=True)
                run_pipeline(spark, config, progress=lambda _m: None, stages=("ingest", "validate", "silver", "gold"))
                handoffs = [r.asDict() for r in lake.read(spark, config.lake_path, catalog.HANDOFFS).collect()]
                ticked = {(r.assign_event_id, r.topic, r.partition) for r in
                          lake.read(spark, config.lake_path, catalog.OWNERSHIP).where("last_progress_ms is not null")
                          .select("assign_event_id", "topic", "partition").collect()}
                clients = {r.agent_id: r.client_id for r in lake.read(spark, config.lake_path, catalog.EVENTS)
                           .select("agent_id", "client_id").distinct().collect()}
            finally:
                spark.stop()
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return {"runs": runs, "handoffs": handoffs, "clients": clients, "ticked": ticked}


def report(landed: dict[str, Any]) -> bool:
    """Print every crash handoff against truth and a summary; True when every truth is inside its bounds."""
    from tests.support.gold_matching import TOLERANCE_S, gold_for_run, matched

    rows, unmatched, missing = [], 0, 0
    for name, run in landed["runs"].items():
        gold = gold_for_run(landed, run.manifest["run_id"])
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
            dups = Bound(truth.duplicates, g["duplicates"], g["duplicates_upper"], DUPLICATES_FLOOR)
            pause = Bound(round(truth.pause_s, 3), g["pause_s"], g["pause_upper_s"], PAUSE_FLOOR_S, TOLERANCE_S)
            rows.append((dups, pause))
            prev = (g["handoff_id"].split(">", 1)[0], g["topic"], g["partition"])
            ticked = "" if prev in landed["ticked"] else " (no tick)"
            print(f"  {where}{ticked}\n    duplicates {dups.cell('')}\n    pause      {pause.cell(' s')}")
    figures = [b for pair in rows for b in pair]
    inside = sum(b.inside for b in figures)
    print(f"\nSUMMARY: {len(rows)} crash handoffs matched ({missing} without gold, {unmatched} gold crash handoffs "
          f"without truth); truth inside {inside}/{len(figures)} bounds; on target: duplicates "
          f"{sum(d.on_target for d, _ in rows)}/{len(rows)}, pause {sum(p.on_target for _, p in rows)}/{len(rows)}; "
          f"widest duplicates {max((d.width or 0 for d, _ in rows), default=0):g}, "
          f"widest pause {max((p.width or 0 for _, p in rows), default=0):g} s")
    return inside == len(figures) and missing == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the runs and the lake in this folder")
    args = parser.parse_args()
    raise SystemExit(0 if report(land(args.keep)) else 1)


if __name__ == "__main__":
    main()
