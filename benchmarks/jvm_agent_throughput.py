"""Throughput of a plain KafkaConsumer vs the Java agent's InstrumentedConsumer, side by side in one run.

    .venv/bin/python benchmarks/jvm_agent_throughput.py [--records 500000] [--rounds 5] [--bootstrap HOST:PORT]

Seeds one topic with small records (embedded broker unless --bootstrap; agent_throughput.py's seeding), then
JvmAgentThroughput.java reads all of it in one JVM with each consumer in each loop shape (poll per record:
max.poll.records=1; batch: the default 500), twice per run and timing the second pass (the steady state: the
group joined, the agent's emitter started, its first fetches sent), alternating plain and instrumented runs ``--rounds`` times after one
warm-up run each, and prints the medians: records/s, the ratio instrumented/plain, and the mean time of a poll
that returned records and the polling thread's CPU time per poll (steadier than the wall clock on a shared
machine). The target is a ratio of at least 0.99. Figures from a shared machine are indicative.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.agent_throughput import PARTITIONS, on_a_broker, seed  # noqa: E402
from lens_runtime.jvm_agent_build import agent_classpath, ensure_agent_jar  # noqa: E402

PROGRAM = Path(__file__).with_name("JvmAgentThroughput.java")


def main(args: argparse.Namespace) -> None:
    ensure_agent_jar()
    topic, telemetry = f"bench-jvm-{uuid.uuid4().hex[:8]}", f"bench-jvm-telemetry-{uuid.uuid4().hex[:8]}"
    t0 = time.perf_counter()
    seed(args.bootstrap, topic, args.records)
    print(f"seeded {args.records:,} records of 16 B into {PARTITIONS} partitions in {time.perf_counter() - t0:.1f} s",
          flush=True)
    subprocess.run(["java", "-cp", agent_classpath(), str(PROGRAM), args.bootstrap, topic, str(args.records),
                    str(args.rounds), telemetry], check=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bootstrap", help="an existing cluster; default: start the embedded broker")
    on_a_broker(main, parser.parse_args())
