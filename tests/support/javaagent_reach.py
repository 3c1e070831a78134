"""What the javaagent's reach tests share: run an application alone with the agent, and read what it told."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.truth_log import read_deliveries, read_events, read_meta
from tests.support.framework_apps import PARTITIONS, PER_PARTITION, App, Running, committed, run_alone
from tests.support.telemetry_log import TelemetryLog

Event = dict[str, Any]


def run_with_agent(kafka, unique: str, run_dir: Path, app: App, javaagent: Path, **options: Any
                   ) -> tuple[Running, GroundTruth, str]:
    """``app`` alone with ``-javaagent:`` its only addition (and the agent's options as -D), checked to have run
    unchanged: every record processed once and committed. Returns it, its truth and the telemetry topic."""
    telemetry = f"reach-telemetry-{unique}"
    jvm = (f"-Dlens.telemetry.topic={telemetry}", "-Dlens.progress.interval.ms=500", *options.pop("jvm", ()))
    member = run_alone(kafka, unique, run_dir, app, javaagent=javaagent, jvm=jvm, **options)
    truth = GroundTruth.load(run_dir)
    assert sorted(d.record_id for d in truth.deliveries) == list(range(PARTITIONS * PER_PARTITION))
    assert committed(kafka, unique, truth) == {p: PER_PARTITION for p in range(PARTITIONS)}
    return member, truth, telemetry


def telemetry_of(kafka, unique: str, telemetry: str) -> list[Event]:
    """The group's events, once its member's revoke is in (in the order its agent numbered them)."""
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    group = f"apps-{unique}"
    try:
        log.wait_for(lambda lg: [e for e in lg.events if e["kind"] == "partitions_revoked" and e["group_id"] == group],
                     timeout=60, what="the member's revoke in the telemetry")
    finally:
        log.close()
    return sorted((e for e in log.events if e["group_id"] == group), key=lambda e: e["seq"])


def assert_measured(kafka, unique: str, member: Running, truth: GroundTruth, telemetry: str,
                    kafka_clients: str, auto_commits: bool = False, said: tuple[str, ...] = ()) -> list[Event]:
    """The agent attached (printing only the lines ``said``) and measured the group's consumer as its truth log has
    it: its kafka-clients, its assignment, each partition's first record and, at each revoke, the last record
    processed; ``auto_commits``: the client's own commits, the last of each partition what the group committed."""
    assert member.agent_lines() == list(said)
    ours = telemetry_of(kafka, unique, telemetry)
    assert {e["body"]["client_version"] for e in ours if e["kind"] == "member_config"} == {
        f"kafka-clients {kafka_clients}"}
    assigned = {(p["topic"], p["partition"]) for e in ours if e["kind"] == "partitions_assigned"
                for p in e["body"]["partitions"]}
    assert assigned == {tp for e in truth.events if e.kind == "assign" for tp in e.partitions}
    [meta] = read_meta(truth.run_dir)
    deliveries = list(read_deliveries(truth.run_dir, meta))
    revokes = [e for e in read_events(truth.run_dir, meta) if e.kind == "revoke"]
    first = {}
    for d in deliveries:
        first.setdefault((d.topic, d.partition), d.offset)
    assert {(e["body"]["topic"], e["body"]["partition"]): e["body"]["offset"] for e in ours
            if e["kind"] == "first_fetch"} == first
    reported = [e for e in ours if e["kind"] == "partitions_revoked"]
    assert len(reported) == len(revokes)
    for event, revoke in zip(reported, revokes):
        for state in event["body"]["partitions"]:
            read = [d.offset for d in deliveries if (d.topic, d.partition) == (state["topic"], state["partition"])
                    and d.mono_ns < revoke.mono_ns]
            assert state["last_processed_offset"] == max(read, default=-1001), state
    if auto_commits:
        last: dict[int, int] = defaultdict(int)
        for e in ours:
            if e["kind"] == "commit":
                assert (e["body"]["mode"], e["body"]["sync"], e["body"]["error"]) == ("auto", False, None), e
                last.update({o["partition"]: o["offset"] for o in e["body"]["offsets"]})
        assert dict(last) == {p: PER_PARTITION for p in range(PARTITIONS)}
    return ours


def assert_stood_aside(kafka, member: Running, telemetry: str, kafka_clients: str) -> None:
    """One line naming the kafka-clients and what it lacks (the check lists all); no telemetry at all."""
    lines = member.agent_lines()
    assert len(lines) == 1 and f"kafka-clients {kafka_clients} lacks what the agent uses: " in lines[0] \
        and lines[0].endswith("the application runs without it."), lines
    assert telemetry not in kafka.admin().list_topics(timeout=10).topics
