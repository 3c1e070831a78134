"""The javaagent where Java consumers run, launched as users launch them with `-javaagent:` the only addition:
Spring Boot executable jars (`java -jar`, kafka-clients in Boot's nested-jar loader: Boot 3.5's kafka-clients 3.9 and
Boot 4.0's 4.1) and a Kafka Streams application are measured. These frameworks own their consumers' commits, so
what they committed is what was processed (`lens.processing=committed`, docs/jvm-agent.md), Streams' assignor is
cooperative, and commit-on-revoke is refused with one line. Each application alone reads a seeded topic: its own
truth log and commits say it ran as without the agent. (A group through a rolling restart and a kill, gold against
the apps' truth: tests/e2e/test_framework_fleets.py, slow.)"""
from __future__ import annotations

import pytest

from tests.support.framework_apps import BOOT3, BOOT4, STREAMS
from tests.support.javaagent_reach import assert_measured, run_with_agent

UNKNOWN = -1001


@pytest.mark.parametrize("app, settings", [(BOOT3, {"listener": "batch", "ack-mode": "manual"}),
                                           (BOOT4, {"listener": "record"}), (STREAMS, {})],
                         ids=["spring-boot-3-executable-jar", "spring-boot-4-executable-jar", "kafka-streams"])
def test_the_agent_measures_a_framework_applications_consumer_by_what_it_committed(kafka, unique, tmp_path, built,
                                                                                   javaagent, app, settings):
    member, truth, telemetry = run_with_agent(kafka, unique, tmp_path, app, javaagent, settings=settings)
    events = assert_measured(kafka, unique, member, truth, telemetry, app.kafka_clients)
    rows = [p for e in events if e["kind"] == "progress" for p in e["body"]["partitions"]]
    assert rows and all(p["last_processed_offset"] == (p["committed_offset"] - 1 if p["committed_offset"] > 0
                                                        else UNKNOWN) for p in rows), rows
    assert {e["rebalance_protocol"] for e in events} == {"cooperative" if app is STREAMS else "eager"}


def test_commit_on_revoke_is_refused_with_one_line_where_kafka_streams_commits(kafka, unique, tmp_path, built,
                                                                               javaagent):
    member, truth, telemetry = run_with_agent(kafka, unique, tmp_path, STREAMS, javaagent,
                                              jvm=("-Dlens.commit.on.revoke=true",))
    [line] = member.agent_lines()
    assert line.startswith("rebalance-lens javaagent: lens.commit.on.revoke is off for the consumers Kafka Streams "
                           "builds: it commits what its tasks processed itself"), line
    events = assert_measured(kafka, unique, member, truth, telemetry, STREAMS.kafka_clients, said=(line,))
    assert {e["body"]["commit_on_revoke"] for e in events if e["kind"] == "member_config"} == {False}
    assert all(e["body"]["commit_on_revoke"] is None for e in events if e["kind"] == "partitions_revoked")
