"""The cost model's handoff pauses per protocol, measured: ``cost_model.HEARTBEATS`` beside them.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/handoff_pauses.py [--runs N] [--keep DIR]

Runs ``rolling-restart`` and ``scale-out-in`` under range, roundrobin, cooperative-sticky and the
consumer protocol (KIP-848, uniform), ``--runs`` times each, on one embedded broker, each run's
timeline jittered by up to one heartbeat (``timeline.Timeline.jitter_s``: a deploy lands anywhere
in the members' heartbeat cycles). From every run's ground truth, after the group formed, it takes
the mean pause of a moved partition under each protocol kind, apart by whether its owner left the
group, and of one an eager rebalance gives back to its owner, in heartbeat intervals (the
scenarios' classic and KIP-848 heartbeats are both 1 s), and prints them beside the priors the cost model holds, with how many handoffs each rests on.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs of each scenario under each assignor")
    parser.add_argument("--keep", help="folder to keep the runs in (default: a temporary one, removed)")
    args = parser.parse_args()

    from lens_runtime.kafka_broker import EmbeddedKafka
    from lens_scenarios.consumer_config import CLASSIC_HEARTBEAT_MS
    from lens_scenarios.runner import RunOptions, run_scenario
    from lens_scenarios.spec import load
    from pipelines.simulator.cost_model import HEARTBEATS, SAME_OWNER_HEARTBEATS

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="lens-pauses-"))
    measured: dict[tuple[str, str], list[float]] = defaultdict(list)
    try:
        with EmbeddedKafka() as broker:
            for name in SCENARIOS:
                for assignor, kind in KINDS.items():
                    for i in range(args.runs):
                        run = run_scenario(load(name), RunOptions(
                            assignor=assignor, out_dir=work / "runs", bootstrap=broker.bootstrap_servers,
                            phase_jitter_s=CLASSIC_HEARTBEAT_MS / 1000))
                        for prior, values in pauses(run.truth, kind).items():
                            measured[prior] += values
                        print(f"  {name} {assignor} run {i + 1}: {len(run.truth.handoffs)} handoffs", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    heartbeat_s = CLASSIC_HEARTBEAT_MS / 1000
    held = {(k, owner): pair[i] for k, pair in HEARTBEATS.items() for i, owner in enumerate(("left", "stayed"))}
    held[("eager", "same owner")] = SAME_OWNER_HEARTBEATS
    print("\n| prior | HEARTBEATS | measured (heartbeats) | ratio | handoffs |\n|---|---|---|---|---|")
    for (kind, owner), prior in held.items():
        values = measured.get((kind, owner), [])
        mean = statistics.fmean(values) / heartbeat_s if values else float("nan")
        print(f"| {kind}, owner {owner} | {prior:.2f} | {mean:.2f} | {mean / prior:.2f} | {len(values)} |")


if __name__ == "__main__":
    main()
