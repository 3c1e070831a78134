"""The cost model's handoff pause priors (``cost_model.prior_pause_s``) beside the measured pauses.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/handoff_pauses.py [--runs N] [--assignors A,B]
        [--commit batch|revoke] [--keep DIR]

Runs ``rolling-restart`` and ``scale-out-in`` under range, roundrobin, cooperative-sticky and the
consumer protocol (KIP-848, uniform), ``--runs`` times each, on one embedded broker, each run's
timeline jittered by up to one heartbeat (``timeline.Timeline.jitter_s``: a deploy lands anywhere
in the members' heartbeat cycles). From every run's ground truth, after the group formed, it takes
the pause of a moved partition under each protocol kind, apart by whether its owner left the
group, and of one an eager rebalance gives back to its owner, and prints per prior: the heartbeats
the mechanism waits for (``PHASE_HEARTBEATS``; the scenarios' classic and KIP-848 heartbeats are
both 1 s), the round's time the model adds (``ROUND_S``), the prior, and the measured mean with its
standard error (handoffs of one run share their draw of phases, so the error is taken over runs)
and what it has beyond the heartbeats: the measured round. ``--commit revoke`` measures the same
with commit-on-revoke.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

SCENARIOS = ("rolling-restart", "scale-out-in")
LEFT_SLACK_NS = 200_000_000
KINDS = {"range": "eager", "roundrobin": "eager", "cooperative-sticky": "cooperative", "consumer": "consumer"}


def pauses(truth, kind: str) -> dict[tuple[str, str], list[float]]:
    """Truth handoffs after the group formed, by the prior they measure: (kind, whether the owner
    left); the previous owner left when it read nothing of any partition after it (within 0.2 s)."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for h in truth.handoffs:
        if h.cause == "start":
            continue
        if h.prev_process != h.next_process:  # a restart's new process is a new member
            left = all(i.last_wall_ns <= h.at_wall_ns + LEFT_SLACK_NS for i in truth.intervals
                       if i.process == h.prev_process)
            out[(kind, "left" if left else "stayed")].append(h.pause_s)
        elif kind == "eager":
            out[("eager", "same owner")].append(h.pause_s)
    return out


def mean_and_error(by_run: list[list[float]]) -> tuple[float, float]:
    """The mean of all values and its standard error, with the runs as the independent draws."""
    values = [v for run in by_run for v in run]
    mean = statistics.fmean(values)
    return mean, sum((sum(run) - len(run) * mean) ** 2 for run in by_run) ** 0.5 / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs of each scenario under each assignor")
    parser.add_argument("--assignors", default=",".join(KINDS), help="comma-separated (default: all four)")
    parser.add_argument("--commit", choices=("batch", "revoke"), default="batch",
                        help="the members' commit style (revoke: commit-on-revoke)")
    parser.add_argument("--keep", help="folder to keep the runs in (default: a temporary one, removed)")
    args = parser.parse_args()
    assignors = args.assignors.split(",")
    if unknown := set(assignors) - set(KINDS):
        parser.error(f"--assignors: unknown {', '.join(sorted(unknown))}; choose from {', '.join(KINDS)}")

    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_scenarios.consumer_config import CLASSIC_HEARTBEAT_MS
    from lens_scenarios.runner import RunOptions, run_scenario
    from lens_scenarios.spec import load
    from pipelines.simulator.cost_model import PHASE_HEARTBEATS, ROUND_S, prior_pause_s

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="lens-pauses-"))
    measured: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    try:
        with EmbeddedKafka() as broker:
            for name in SCENARIOS:
                for assignor in assignors:
                    for i in range(args.runs):
                        run = run_scenario(load(name), RunOptions(
                            assignor=assignor, commit=args.commit, out_dir=work / "runs",
                            bootstrap=broker.bootstrap_servers, phase_jitter_s=CLASSIC_HEARTBEAT_MS / 1000))
                        for prior, values in pauses(run.truth, KINDS[assignor]).items():
                            measured[prior].append(values)
                        print(f"  {name} {assignor} run {i + 1}: {len(run.truth.handoffs)} handoffs", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    heartbeat_ms = CLASSIC_HEARTBEAT_MS
    print(f"\ncommit {args.commit}; seconds (heartbeats of {heartbeat_ms} ms)\n"
          "| prior | heartbeats | round | prior | measured | measured round | handoffs (runs) |\n"
          "|---|---|---|---|---|---|---|")
    for (kind, owner) in [(k, o) for k in PHASE_HEARTBEATS for o in ("left", "stayed")] + [("eager", "same owner")]:
        by_run = measured.get((kind, owner))
        if not by_run:
            continue
        waits = PHASE_HEARTBEATS[kind][0 if owner == "left" else 1]
        mean, error = mean_and_error(by_run)
        label = "given back to its owner" if owner == "same owner" else f"owner {owner}"
        print(f"| {kind}, {label} | {waits:.1f} | {ROUND_S[kind]:.2f} | "
              f"{prior_pause_s(kind, owner == 'left', heartbeat_ms):.2f} | {mean:.3f} ± {error:.3f} | "
              f"{mean - waits * heartbeat_ms / 1000:.3f} | {sum(map(len, by_run))} ({len(by_run)}) |")


if __name__ == "__main__":
    main()
