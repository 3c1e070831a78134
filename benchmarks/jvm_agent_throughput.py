"""Throughput of a plain KafkaConsumer vs the Java agent's InstrumentedConsumer, side by side in one run.

    .venv/bin/python benchmarks/jvm_agent_throughput.py [--records 500000] [--rounds 5] [--bootstrap HOST:PORT]
                                                        [--baseline-jar OTHER/rebalance-lens-agent.jar]

Seeds one topic with small records (embedded broker unless --bootstrap; agent_throughput.py's seeding), then
JvmAgentThroughput.java reads all of it in one JVM with each consumer in each loop shape (poll per record:
max.poll.records=1; batch: the default 500), twice per run and timing the second pass (the steady state: the
group joined, the agent's emitter started, its first fetches sent), ``--rounds`` runs of each in a rotating
order after one warm-up run each, and prints the medians: records/s, the ratio to plain, and the mean time of a poll
that returned records and the polling thread's CPU time per poll (steadier than the wall clock on a shared
machine), and the bytes it allocated per poll. The target is a ratio of at least 0.99. Figures from a shared
machine are indicative: ``--baseline-jar`` adds another build of the agent (e.g. main's jar, copied before a
change) to the same rotation, so a change to the poll path is compared within one run, not across two.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.agent_throughput import PARTITIONS, on_a_broker, require_file, seed  # noqa: E402
from lens_runtime.jvm_agent_build import LIB, ensure_agent_jar  # noqa: E402

PROGRAM = Path(__file__).with_name("JvmAgentThroughput.java")


def main(args: argparse.Namespace) -> None:
    jar = ensure_agent_jar()
    topic, telemetry = f"bench-jvm-{uuid.uuid4().hex[:8]}", f"bench-jvm-telemetry-{uuid.uuid4().hex[:8]}"
    t0 = time.perf_counter()
    seed(args.bootstrap, topic, args.records)
    print(f"seeded {args.records:,} records of 16 B into {PARTITIONS} partitions in {time.perf_counter() - t0:.1f} s",
          flush=True)
    # The agent jars are not on the classpath: the program loads each on its own over these (kafka-clients, ...).
    libraries = ":".join(str(path) for path in sorted(LIB.glob("*.jar")))
    baseline = [str(args.baseline_jar.resolve())] if args.baseline_jar is not None else []
    subprocess.run(["java", "-cp", libraries, str(PROGRAM), args.bootstrap, topic, str(args.records),
                    str(args.rounds), telemetry, str(jar), *baseline], check=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bootstrap", help="an existing cluster; default: start the embedded broker")
    parser.add_argument("--baseline-jar", type=Path, help="another build of the agent's jar, run in the same rotation")
    arguments = parser.parse_args()
    require_file("--baseline-jar", arguments.baseline_jar, "a built rebalance-lens-agent.jar")
    on_a_broker(main, arguments)
