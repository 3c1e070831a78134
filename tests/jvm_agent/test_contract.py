"""The Java agent (jvm_agent/) speaks the same contract: a Java application's group through a rebalance, read
back from the telemetry topic and validated, event by event, against consumer_agent/telemetry-v1.schema.json.

RebalanceDriver.java (beside this file, run by tests/support/jvm_drivers.py) plays members a and b of one
group: a alone, b joins, b's poll fails (a client error), a enforces a rebalance (classic only), b leaves;
then member c, whose one-event buffer drops telemetry and reports it in agent_health. The same choreography
on plain KafkaConsumers says what the application's listener gets without the agent.
"""
from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from consumer_agent.member_states import is_allowed
from lens_runtime.jvm_agent_build import MODULE
from lens_runtime.jvm_deps import pinned_versions
from tests.support.jvm_drivers import run_driver
from tests.support.telemetry_log import TelemetryLog

PARTITIONS = 4
MARKED_BELOW = 10  # RebalanceDriver.MARKED_BELOW
# Every kind the Java agent emits in this run; client_stats is librdkafka's statistics, which Java has not.
KINDS = {"member_config", "state_transition", "partitions_assigned", "partitions_revoked", "first_fetch",
         "commit", "progress", "client_error", "agent_health"}


def test_the_agent_pins_the_brokers_kafka_clients():
    pom = ET.parse(MODULE / "pom.xml").getroot()
    version = pom.find("{http://maven.apache.org/POM/4.0.0}properties/{http://maven.apache.org/POM/4.0.0}kafka.version")
    assert version is not None and version.text == pinned_versions().kafka


def _drive(kafka, tmp_path: Path, protocol: str, mode: str, topic: str, group: str, telemetry: str) -> dict[str, Any]:
    out = tmp_path / f"{mode}.json"
    args = [kafka.bootstrap_servers, topic, group, telemetry, protocol, mode, str(out)]
    run_driver("RebalanceDriver", args, tmp_path)
    return json.loads(out.read_text())


def _calls_as_events(calls: list[dict[str, Any]], role: str) -> list[tuple[str, list[int]]]:
    return [(c["callback"], c["partitions"]) for c in calls if c["role"] == role]


def _shape(calls: list[dict[str, Any]], role: str) -> list[tuple[str, int]]:
    """One member's listener calls, by callback and size (who gets which half of a range assignment depends on
    random member ids; the order between two members' calls on the driver's thread, on who polled first)."""
    return [(c["callback"], len(c["partitions"])) for c in calls if c["role"] == role]


def _owned_per_step(calls: list[dict[str, Any]]) -> list[tuple[str, dict[str, int]]]:
    """How many partitions each member's listener says it owns at the end of each driver step."""
    owned: dict[str, set[int]] = {"a": set(), "b": set()}
    steps = []
    for call in calls:
        if call["callback"] == "step" and not call["step"].startswith("c "):  # c: the agent run's extra member
            steps.append((call["step"], {role: len(parts) for role, parts in owned.items()}))
        elif call["role"] in owned:  # eager revokes everything before it assigns: add and remove fit both
            change = set(call["partitions"])
            owned[call["role"]] = owned[call["role"]] | change if call["callback"] == "assigned" \
                else owned[call["role"]] - change
    return steps


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_java_group_through_a_rebalance_speaks_the_contract(kafka, unique, tmp_path, protocol):
    topic = kafka.create_topic(f"jvm-{unique}", partitions=PARTITIONS)
    kafka.seed_partitions(topic, PARTITIONS, 50)
    telemetry = f"jvm-telemetry-{unique}"
    agent = _drive(kafka, tmp_path, protocol, "agent", topic, f"jvm-{unique}", telemetry)
    plain = _drive(kafka, tmp_path, protocol, "plain", topic, f"jvm-plain-{unique}", telemetry)
    out_of_range = "org.apache.kafka.clients.consumer.OffsetOutOfRangeException"
    assert agent["client_error"] == plain["client_error"] == out_of_range


    agents = agent["agents"]
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)  # validates every event against the v1 schema
    try:
        def closed(lg: TelemetryLog) -> bool:
            return all(any(e["kind"] == "state_transition" and e["body"]["reason"] == "close"
                           for e in lg.of(agents[role])) for role in ("a", "b"))

        log.wait_for(lambda lg: closed(lg) and lg.of(agents["c"], "agent_health"), timeout=60,
                     what="the members' close and c's agent_health")
        events = log.events
    finally:
        log.close()

    assert {e["agent_id"] for e in events} == set(agents.values())
    expected = KINDS | ({"rebalance_requested"} if protocol == "classic" else set())
    assert {e["kind"] for e in events} == expected
    for e in events:
        assert e["group_protocol"] == protocol and e["schema_version"] == 1 and e["host"] == socket.gethostname()
        if e["kind"] == "state_transition":  # the Java agent walks the Python agent's state machine
            body = e["body"]
            assert body["allowed"] == is_allowed(protocol, body["from_state"], body["to_state"]), body
            assert body["allowed"], body

    # Gapless sequence numbers where nothing was dropped; where c dropped, every gap is a drop it counted or a
    # drop after its last delivered health report.
    for role in ("a", "b"):
        seqs = [e["seq"] for e in log.of(agents[role])]
        assert seqs == list(range(len(seqs))), role
    c_seqs = {e["seq"] for e in log.of(agents["c"])}
    missing = set(range(max(c_seqs) + 1)) - c_seqs
    reported = max(e["body"]["dropped_total"] for e in log.of(agents["c"], "agent_health"))
    assert reported >= 1 and len(missing) >= reported

    # The application's listener saw what the agent reported, call for call, and what a plain client's sees.
    for role in ("a", "b"):
        partition_events = log.of(agents[role], "partitions_assigned", "partitions_revoked", "partitions_lost")
        reported_changes = [(e["kind"].removeprefix("partitions_"),
                             sorted(p["partition"] for p in e["body"]["partitions"])) for e in partition_events]
        assert _calls_as_events(agent["calls"], role) == reported_changes, role
    # Each step of the driver ends when the members' listeners say they own what the step waits for; then each
    # owns as many partitions as with the plain client (how the group splits them: 2 and 2 both times).
    assert _owned_per_step(agent["calls"]) == _owned_per_step(plain["calls"])
    if protocol == "classic":  # eager range: each member's listener gets the same calls, sizes and order
        assert all(_shape(agent["calls"], role) == _shape(plain["calls"], role) for role in ("a", "b"))

    errors = [e["body"] for e in events if e["kind"] == "client_error"]
    assert [(b["name"], b["fatal"]) for b in errors] == [("OffsetOutOfRangeException", False)]
    # b (lens.processing=explicit) marked only offsets 0-9 processed: its processed frontier stops at 9, where a
    # (the default mode: what a poll returned is processed by the next) follows its position.
    b_frontiers = [p["last_processed_offset"] for e in log.of(agents["b"], "progress") for p in e["body"]["partitions"]]
    assert max(b_frontiers) == MARKED_BELOW - 1
    a_progress = [p for e in log.of(agents["a"], "progress") for p in e["body"]["partitions"]]
    assert all(p["last_processed_offset"] == (p["position"] - 1 if p["position"] > 0 else -1001) for p in a_progress)
    a_id = agents["a"]
    commits = log.of(a_id, "commit")
    assert any(c["body"]["sync"] for c in commits) and any(not c["body"]["sync"] for c in commits)
    assert all(c["body"]["error"] is None for c in commits)
    # a's first commitSync() came after it read every partition: the client committed each one's position
    # (a no-argument commit right after an assignment may commit nothing: the client holds no position yet).
    first_commit = commits[0]["body"]
    committed = {o["partition"] for o in first_commit["offsets"] if o["offset"] > 0}
    assert first_commit["sync"] and committed == set(range(PARTITIONS))
    first = log.of(a_id, "first_fetch")
    assert {f["body"]["partition"] for f in first} == set(range(PARTITIONS))
    assert all(f["body"]["seen"] and f["body"]["offset"] >= 0 for f in first)
    config = log.of(a_id, "member_config")[0]["body"]
    assert config["topics"] == [topic] and config["client_version"].startswith("kafka-clients 4.2")
    assert config["config"]["key.deserializer"] == "[redacted]"  # the Python agent's rule: any key naming "key"
    assert "lens.telemetry.topic" not in config["config"]  # the agent's own options never reach the client
