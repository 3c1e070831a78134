"""The javaagent against every kafka-clients line from the oldest it is to support (3.5) to the newest (4.4), on the
embedded broker: the plain auto-committing application (compiled against 3.5's API) runs on each version with
`-javaagent:` added, classic protocol everywhere and the consumer protocol on 4.x. Where the agent's references
resolve it measures the consumer; elsewhere it prints one line naming what that version lacks and the application
runs unchanged. Which versions it attaches to is what its library links against today (compiled against 4.2's
API): `java -jar rebalance-lens-javaagent.jar check` lists each version's gaps, the plan for widening it."""
from __future__ import annotations

import subprocess

import pytest

from tests.support.framework_apps import KAFKA_CLIENTS_MATRIX, PLAIN, kafka_clients_classpath
from tests.support.javaagent_reach import assert_measured, assert_stood_aside, run_with_agent

ATTACHES = {"4.1.2", "4.2.0", "4.3.1"}
# one thing each other version lacks (the check names all): 3.x predates 4.0's API, 4.0 lacks 4.1's
# CloseOptions, 4.4 moved AppInfoParser to common.utils.internals
LACKS = {"3.5.2": "ConsumerRecords.nextOffsets()", "3.9.1": "ConsumerRecords.nextOffsets()",
         "4.0.2": "Consumer.close(CloseOptions)", "4.4.0": "AppInfoParser"}
RUNS = [(v, "classic") for v in KAFKA_CLIENTS_MATRIX] + [(v, "consumer") for v in KAFKA_CLIENTS_MATRIX
                                                          if v.startswith("4.")]


def test_the_check_names_the_versions_the_agent_attaches_to_and_what_the_others_lack(javaagent):
    jars = [next(j for j in kafka_clients_classpath(v) if j.name.startswith("kafka-clients-"))
            for v in KAFKA_CLIENTS_MATRIX]
    done = subprocess.run(["java", "-jar", str(javaagent), "check", *map(str, jars)], capture_output=True,
                          text=True, timeout=120)
    verdicts = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert {v for v in KAFKA_CLIENTS_MATRIX if verdicts[f"kafka-clients-{v}.jar"] == "the agent attaches"} == ATTACHES
    for version, lacking in LACKS.items():
        assert lacking in verdicts[f"kafka-clients-{version}.jar"]
    assert done.returncode == 1  # not every version: the exit status says so


@pytest.mark.parametrize("version, protocol", RUNS, ids=[f"{v}-{p}" for v, p in RUNS])
def test_the_plain_application_on_each_kafka_clients_with_the_agent(kafka, unique, tmp_path, built, javaagent,
                                                                     version, protocol):
    member, truth, telemetry = run_with_agent(kafka, unique, tmp_path, PLAIN, javaagent, kafka_clients=version,
                                              config={"group.protocol": protocol})
    if version in ATTACHES:
        assert_measured(kafka, unique, member, truth, telemetry, version)
    else:
        assert_stood_aside(kafka, member, telemetry, version)
