"""The javaagent against every kafka-clients line from the oldest it supports (3.5) to the newest (4.4), on the
embedded broker: the plain auto-committing application (compiled against 3.5's API) runs on each version with
`-javaagent:` added, the classic protocol everywhere and the consumer protocol from 3.9 (KIP-848's client; 3.7 and
3.8 had it as early access). On each the agent attaches through its version family (3.5 and 3.6: the facade family;
3.7 on: the delegate family) and measures the consumer: its assignment, its first fetches, its auto commits and what
it had processed at its revoke, against the application's own truth log; its first assignment is timed by the
client's coordinator (the advice on it attaches with the family). A kafka-clients older than the range
(3.1, which lacks `enforceRebalance(String)`) gets one line and the application runs unchanged.

The default suite runs a representative subset (the oldest version on the facade family, 3.9 on the consumer
protocol, the newest); the whole matrix is slow:
`PYTHONPATH=$PWD python -m pytest -m slow tests/jvm_agent/test_kafka_clients_matrix.py`."""
from __future__ import annotations

import subprocess

import pytest

from tests.support.framework_apps import KAFKA_CLIENTS_MATRIX, PLAIN, UNSUPPORTED_KAFKA_CLIENTS, kafka_clients_classpath
from tests.support.javaagent_reach import assert_measured, assert_stood_aside, run_with_agent

# the family each version is reached through (javaagent.Family): KafkaConsumer has a ConsumerDelegate from 3.7
FAMILY = {v: "facade" if v < "3.7" else "delegate" for v in KAFKA_CLIENTS_MATRIX}
PROTOCOLS = {v: ("classic", "consumer") if v >= "3.9" else ("classic",) for v in KAFKA_CLIENTS_MATRIX}
DEFAULT_SUITE = {("3.5.2", "classic"), ("3.9.1", "consumer"), ("4.4.0", "classic")}
RUNS = [pytest.param(v, p, id=f"{v}-{p}", marks=() if (v, p) in DEFAULT_SUITE else pytest.mark.slow)
        for v in KAFKA_CLIENTS_MATRIX for p in PROTOCOLS[v]]


def _jar(version: str) -> str:
    return str(next(j for j in kafka_clients_classpath(version) if j.name.startswith("kafka-clients-")))


def test_the_check_names_each_versions_family_and_what_an_older_one_lacks(javaagent):
    versions = [*KAFKA_CLIENTS_MATRIX, UNSUPPORTED_KAFKA_CLIENTS]
    done = subprocess.run(["java", "-jar", str(javaagent), "check", *map(_jar, versions)], capture_output=True,
                          text=True, timeout=120)
    verdicts = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert {v: verdicts[f"kafka-clients-{v}.jar"] for v in KAFKA_CLIENTS_MATRIX} == {
        v: f"the agent attaches ({FAMILY[v]} family)" for v in KAFKA_CLIENTS_MATRIX}
    assert verdicts[f"kafka-clients-{UNSUPPORTED_KAFKA_CLIENTS}.jar"] == \
        "the agent does not attach; it lacks Consumer.enforceRebalance(String)"
    assert done.returncode == 1  # not every version: the exit status says so


@pytest.mark.parametrize("version, protocol", RUNS)
def test_the_agent_measures_the_plain_application_on_each_kafka_clients(kafka, unique, tmp_path, built, javaagent,
                                                                        version, protocol):
    member, truth, telemetry = run_with_agent(kafka, unique, tmp_path, PLAIN, javaagent, kafka_clients=version,
                                              config={"group.protocol": protocol})
    ours = assert_measured(kafka, unique, member, truth, telemetry, version, auto_commits=True)
    # The coordinator advice attached with the family: the first assignment is timed by the client's coordinator.
    timing = next(e for e in ours if e["kind"] == "partitions_assigned")["body"]["rebalance_timing"]
    assert timing is not None and timing["source"] == "client_coordinator", timing
    timed = ("join_ms", "assign_ms", "sync_ms") if protocol == "classic" else ("reconcile_ms",)
    assert all(timing[field] is not None for field in timed), timing


def test_a_kafka_clients_older_than_the_range_gets_one_line_and_the_application_runs_unchanged(
        kafka, unique, tmp_path, built, javaagent):
    member, _truth, telemetry = run_with_agent(kafka, unique, tmp_path, PLAIN, javaagent,
                                               kafka_clients=UNSUPPORTED_KAFKA_CLIENTS)
    assert_stood_aside(kafka, member, telemetry, UNSUPPORTED_KAFKA_CLIENTS)
