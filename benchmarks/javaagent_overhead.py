"""The javaagent's overhead: a plain KafkaConsumer's poll loop with and without ``-javaagent``, side by side in one run.

    .venv/bin/python benchmarks/javaagent_overhead.py [--records 1000000] [--rounds 3] [--iterations 5]
                                                      [--threads 1 3] [--bootstrap HOST:PORT]
                                                      [--baseline-jar OTHER/rebalance-lens-javaagent.jar]

Seeds one topic with small records (embedded broker unless --bootstrap), builds the JMH benchmark
(benchmarks/jmh: ``ConsumerPoll``, JMH 1.37) and runs it in rounds. Each round runs, for each thread count (one
consumer per JVM, and several: one per thread), one JMH fork per mode in an order that alternates between rounds
(plain, then the javaagent; the next round the javaagent first), so the machine's load drifts over both alike. Each
fork measures poll per record (max.poll.records=1) and batch (500). ``--baseline-jar`` adds another build of the
javaagent (e.g. one copied before a change) to the rotation.

Printed per loop shape and thread count: records/s of each mode (mean of the iterations, with the 95% confidence
interval of the mean), the ratio to plain with its 95% bootstrap confidence interval, the same for the polling
thread's CPU time per record (what other jobs on a shared machine move least), and the bytes allocated per poll
(JMH's gc profiler). The target: a ratio of at least 0.99. A shared machine's load moves between forks; so the same
poll paths are also raced paired (``PairedPoll``): in one thread, chunks of 256 polls of a plain consumer and of one
built as the javaagent's advice builds it, in turn, each iteration's ratio a pair's (``--rounds`` forks of twice
``--iterations``). Then the routing of one consumer call alone
(``DelegateRouting``): direct, through the javaagent's generated delegate class, and through the Proxy the agent used
before, in ns and bytes per call. The machine's load average is printed before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.agent_throughput import on_a_broker, require_file, seed  # noqa: E402
from lens_runtime.jvm_agent_build import JAVAAGENT, built_after, ensure_agent_jar  # noqa: E402
from lens_runtime.jvm_deps import maven  # noqa: E402

JMH = Path(__file__).with_name("jmh")
BENCHMARK = "io.rebalancelens.bench.ConsumerPoll"
ROUTING = "io.rebalancelens.bench.DelegateRouting"
PAIRED = "io.rebalancelens.bench.PairedPoll"
SHAPES = {"1": "poll per record", "500": "batch (500)"}
RESAMPLES = 4000
# Student's t, two-sided 95%, by degrees of freedom (above 30: the normal's 1.96 is within 4%).
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 12: 2.18, 14: 2.14,
       16: 2.12, 18: 2.10, 20: 2.09, 24: 2.06, 29: 2.05, 30: 2.04}
Samples = dict[str, list[float]]


def jmh_classpath() -> str:
    """The benchmark's classes and libraries, built unless current."""
    sources = [JMH / "pom.xml", *(JMH / "src").rglob("*.java")]
    classes = JMH / "target" / "classes"
    if not built_after([classes / "META-INF" / "BenchmarkList"], sources):
        maven(JMH / "pom.xml", "package")
    return ":".join([str(classes), *(str(p) for p in sorted((JMH / "target" / "lib").glob("*.jar")))])


def run_fork(classpath: str, args: argparse.Namespace, topic: str, threads: int, agent: Path | None,
             telemetry: str, out: Path) -> list[dict]:
    """One JMH fork of every loop shape; its JSON results."""
    command = ["java", "-cp", classpath, "org.openjdk.jmh.Main", BENCHMARK, "-f", "1", "-wi", str(args.warmups),
               "-w", "1s", "-i", str(args.iterations), "-r", "1s", "-t", str(threads), "-foe", "true",
               "-prof", "gc", "-p", f"bootstrap={args.bootstrap}", "-p", f"topic={topic}",
               "-p", "maxPollRecords=1,500", "-rf", "json", "-rff", str(out)]
    if agent is not None:
        command += ["-jvmArgsAppend", f"-javaagent:{agent} -Dlens.telemetry.topic={telemetry}"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def routing(classpath: str, out: Path) -> None:
    """The routing of a consumer call alone (``DelegateRouting``, the javaagent's jar on the class path, not as an
    agent): ns and bytes per call, direct, through the agent's generated delegate class and through a Proxy."""
    subprocess.run(["java", "-cp", f"{classpath}:{JAVAAGENT}", "org.openjdk.jmh.Main", ROUTING, "-f", "2", "-wi", "5",
                    "-w", "1s", "-i", "5", "-r", "1s", "-prof", "gc", "-rf", "json", "-rff", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    print("\nrouting one call (MockConsumer.poll behind it): ns per call [99.9% CI], bytes allocated per call")
    for result in json.loads(out.read_text()):
        score, (lo, hi) = result["primaryMetric"]["score"], result["primaryMetric"]["scoreConfidence"]
        allocated = result["secondaryMetrics"]["gc.alloc.rate.norm"]["score"]
        print(f"  {result['params']['routing']:<10} {score:8.1f} ns [{lo:.1f}, {hi:.1f}]  {allocated:6.0f} B")


def paired(classpath: str, args: argparse.Namespace, topic: str, telemetry: str, out: Path) -> None:
    """The javaagent's poll path and the plain client's interleaved in one thread (``PairedPoll``: chunks of polls
    of each in turn), one pair per thread: per iteration, the ratio of their records/s and of their polling-thread
    CPU per record; the mean ratio with its 95% confidence interval (t, over the iterations)."""
    print("\npaired in one JVM (the javaagent's poll path built as its advice builds it, the plain client beside it):")
    for threads in args.threads:
        file = out / f"paired-{threads}.json"
        subprocess.run(["java", "-cp", f"{classpath}:{JAVAAGENT}", "org.openjdk.jmh.Main", PAIRED, "-f",
                        str(args.rounds), "-wi", str(args.warmups), "-w", "1s", "-i", str(2 * args.iterations),
                        "-r", "1s", "-t", str(threads), "-foe", "true", "-p", f"bootstrap={args.bootstrap}",
                        "-p", f"topic={topic}", "-p", f"telemetry={telemetry}", "-p", "maxPollRecords=1,500",
                        "-rf", "json", "-rff", str(file)], check=True, stdout=subprocess.DEVNULL)
        for result in json.loads(file.read_text()):
            raw = {k: [v for fork in m["rawData"] for v in fork] for k, m in result["secondaryMetrics"].items()}
            rate = [(ar / aw) / (pr / pw) for ar, aw, pr, pw in zip(raw["agentRecords"], raw["agentWallNanos"],
                                                                    raw["plainRecords"], raw["plainWallNanos"])]
            cpu = [(pc / pr) / (ac / ar) for pc, pr, ac, ar in zip(raw["plainCpuNanos"], raw["plainRecords"],
                                                                   raw["agentCpuNanos"], raw["agentRecords"])]
            (r, r_ci), (c, c_ci) = mean_ci(rate), mean_ci(cpu)
            print(f"  {SHAPES[result['params']['maxPollRecords']]:<16} {threads} pair(s): records/s ratio {r:.4f} "
                  f"[{r - r_ci:.4f}, {r + r_ci:.4f}]  CPU ratio {c:.4f} [{c - c_ci:.4f}, {c + c_ci:.4f}]  "
                  f"({len(rate)} paired iterations)")


def samples(result: dict) -> Samples:
    """Per measured iteration: records/s, CPU ns per record, bytes allocated per poll."""
    secondary = result["secondaryMetrics"]
    flat = lambda name: [v for fork in secondary[name]["rawData"] for v in fork]  # noqa: E731
    cpu = [n / r for n, r in zip(flat("cpuNanos"), flat("cpuRecords")) if r]
    return {"records_per_s": flat("records"), "cpu_ns_per_record": cpu, "bytes_per_poll": flat("gc.alloc.rate.norm")}


def mean_ci(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% confidence interval (Student's t)."""
    if len(values) < 2:
        return (values[0] if values else float("nan")), float("nan")
    df = len(values) - 1
    t = T95[max(k for k in T95 if k <= df)] if df <= max(T95) else 1.96
    return statistics.fmean(values), t * statistics.stdev(values) / len(values) ** 0.5


def ratio_ci(mode: list[float], plain: list[float], rng: random.Random) -> tuple[float, float, float]:
    """mean(mode) / mean(plain) and its 95% percentile bootstrap interval (iterations resampled in each)."""
    def resampled(values: list[float]) -> float:
        return statistics.fmean(rng.choices(values, k=len(values)))
    ratios = sorted(resampled(mode) / resampled(plain) for _ in range(RESAMPLES))
    return (statistics.fmean(mode) / statistics.fmean(plain), ratios[int(0.025 * RESAMPLES)],
            ratios[int(0.975 * RESAMPLES) - 1])


def report(collected: dict[tuple[str, int, str], Samples], modes: list[str]) -> None:
    rng = random.Random(7)
    for (shape, threads) in sorted({(s, t) for s, t, _ in collected}, key=lambda k: (k[1], k[0])):
        plain = collected[(shape, threads, "plain")]
        print(f"\n{SHAPES[shape]}, {threads} consumer(s) per JVM ({len(plain['records_per_s'])} iterations each)")
        for mode in modes:
            own = collected[(shape, threads, mode)]
            rate, rate_ci = mean_ci(own["records_per_s"])
            line = f"  {mode:<10} {rate:>13,.0f} rec/s +- {rate_ci:,.0f}"
            if mode != "plain":
                r, lo, hi = ratio_ci(own["records_per_s"], plain["records_per_s"], rng)
                c, clo, chi = ratio_ci(plain["cpu_ns_per_record"], own["cpu_ns_per_record"], rng)
                line += f"  ratio {r:.4f} [{lo:.4f}, {hi:.4f}]  CPU ratio {c:.4f} [{clo:.4f}, {chi:.4f}]"
            cpu, _ = mean_ci(own["cpu_ns_per_record"])
            line += f"  CPU/record {cpu:,.0f} ns  alloc/poll {statistics.fmean(own['bytes_per_poll']):,.0f} B"
            print(line)
    print("\nratio: records/s over plain's (at least 0.99 is the target); CPU ratio: plain's polling-thread CPU per "
          "record over the mode's (below 1: the mode costs more CPU); [95% bootstrap confidence interval]")


def main(args: argparse.Namespace) -> None:
    agent = ensure_agent_jar() and JAVAAGENT
    classpath = jmh_classpath()
    topic, telemetry = f"bench-poll-{uuid.uuid4().hex[:8]}", f"bench-poll-telemetry-{uuid.uuid4().hex[:8]}"
    seed(args.bootstrap, topic, args.records)
    print(f"seeded {args.records:,} records of 16 B; load average before: {os.getloadavg()}", flush=True)
    jars = {"plain": None, "javaagent": agent}
    if args.baseline_jar:
        jars["baseline"] = args.baseline_jar.resolve()
    modes = list(jars)
    collected: dict[tuple[str, int, str], Samples] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory() as scratch:
        out = args.results or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        for round_ in range(args.rounds):
            for threads in args.threads:
                order = modes if round_ % 2 == 0 else modes[::-1]
                for mode in order:
                    t0 = time.monotonic()
                    results = run_fork(classpath, args, topic, threads, jars[mode], telemetry,
                                       out / f"{round_}-{threads}-{mode}.json")
                    for result in results:
                        for name, values in samples(result).items():
                            collected[(result["params"]["maxPollRecords"], threads, mode)][name] += values
                    print(f"round {round_ + 1}/{args.rounds}: {mode}, {threads} thread(s) in "
                          f"{time.monotonic() - t0:.0f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
        report(collected, modes)
        paired(classpath, args, topic, telemetry, out)
        routing(classpath, out / "routing.json")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=5, help="JMH warm-up iterations of 1 s per fork")
    parser.add_argument("--iterations", type=int, default=5, help="JMH measured iterations of 1 s per fork")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 3], help="consumers per JVM, one per thread")
    parser.add_argument("--bootstrap", help="an existing cluster; default: start the embedded broker")
    parser.add_argument("--baseline-jar", type=Path, help="another build of the javaagent's jar, in the rotation")
    parser.add_argument("--results", type=Path, help="keep JMH's JSON results of each fork in this folder")
    arguments = parser.parse_args()
    require_file("--baseline-jar", arguments.baseline_jar, "a built rebalance-lens-javaagent.jar")
    on_a_broker(main, arguments)
