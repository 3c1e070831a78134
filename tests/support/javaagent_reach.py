"""What the javaagent's reach tests share: run an application alone with the agent, and read what it told."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from lens_scenarios.ground_truth import GroundTruth
from tests.support.framework_apps import PARTITIONS, PER_PARTITION, App, Running, committed, run_alone
from tests.support.telemetry_log import TelemetryLog


def run_with_agent(kafka, unique: str, run_dir: Path, app: App, javaagent: Path, **options: Any
                   ) -> tuple[Running, GroundTruth, str]:
    """``app`` alone with ``-javaagent:`` its only addition (and the agent's options as -D), checked to have run
    unchanged: every record processed once and committed. Returns it, its truth and the telemetry topic."""
    telemetry = f"reach-telemetry-{unique}"
    jvm = (f"-Dlens.telemetry.topic={telemetry}", "-Dlens.progress.interval.ms=500")
    member = run_alone(kafka, unique, run_dir, app, javaagent=javaagent, jvm=jvm, **options)
    truth = GroundTruth.load(run_dir)
    assert sorted(d.record_id for d in truth.deliveries) == list(range(PARTITIONS * PER_PARTITION))
    assert committed(kafka, unique, truth) == {p: PER_PARTITION for p in range(PARTITIONS)}
    return member, truth, telemetry


def assert_measured(kafka, unique: str, member: Running, truth: GroundTruth, telemetry: str,
                    kafka_clients: str) -> None:
    """The agent attached without a word and reported the group's consumer: its kafka-clients, its assignment."""
    assert member.agent_lines() == []
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    try:
        group = f"apps-{unique}"
        log.wait_for(lambda lg: [e for e in lg.events if e["kind"] == "partitions_revoked" and e["group_id"] == group],
                     timeout=60, what="the member's revoke in the telemetry")
    finally:
        log.close()
    ours = [e for e in log.events if e["group_id"] == group]
    assert {e["body"]["client_version"] for e in ours if e["kind"] == "member_config"} == {
        f"kafka-clients {kafka_clients}"}
    assigned = {(p["topic"], p["partition"]) for e in ours if e["kind"] == "partitions_assigned"
                for p in e["body"]["partitions"]}
    assert assigned == {tp for e in truth.events if e.kind == "assign" for tp in e.partitions}


def assert_stood_aside(kafka, member: Running, telemetry: str, kafka_clients: str) -> None:
    """One line naming the kafka-clients and what it lacks (the check lists all); no telemetry at all."""
    lines = member.agent_lines()
    assert len(lines) == 1 and f"kafka-clients {kafka_clients} lacks what the agent uses: " in lines[0] \
        and lines[0].endswith("the application runs without it."), lines
    assert telemetry not in kafka.admin().list_topics(timeout=10).topics
