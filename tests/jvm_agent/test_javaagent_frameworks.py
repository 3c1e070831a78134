"""The javaagent where Java consumers run, launched as users launch them with `-javaagent:` the only addition:
a Spring Boot executable jar (`java -jar`, kafka-clients in Boot's nested-jar loader) and a Kafka Streams
application are measured; a Spring Boot 3.5 jar, whose kafka-clients 3.9 lacks what the agent uses today, gets
one line and runs unchanged. Each application alone reads a seeded topic: its own truth log and commits say it
ran as without the agent. (The end-to-end runs, a group through a rolling restart and a kill, gold against the
apps' truth, are the slow suite's, once the agent's library reaches these versions.)"""
from __future__ import annotations

import pytest

from tests.support.framework_apps import BOOT3, BOOT4, STREAMS
from tests.support.javaagent_reach import assert_measured, assert_stood_aside, run_with_agent


@pytest.mark.parametrize("app", [BOOT4, STREAMS], ids=["spring-boot-4-executable-jar", "kafka-streams"])
def test_the_agent_measures_a_framework_applications_consumer(kafka, unique, tmp_path, built, javaagent, app):
    member, truth, telemetry = run_with_agent(kafka, unique, tmp_path, app, javaagent,
                                              settings={"listener": "record"})
    assert_measured(kafka, unique, member, truth, telemetry, app.kafka_clients)


def test_a_kafka_clients_the_agent_cannot_use_gets_one_line_and_the_application_runs_unchanged(
        kafka, unique, tmp_path, built, javaagent):
    member, _truth, telemetry = run_with_agent(kafka, unique, tmp_path, BOOT3, javaagent,
                                               settings={"listener": "batch", "ack-mode": "manual"})
    assert_stood_aside(kafka, member, telemetry, BOOT3.kafka_clients)
