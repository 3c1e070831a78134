"""What KafkaConsumer.enforceRebalance(reason) does per protocol, measured through the Java agent's telemetry.

EnforceDriver.java (beside this file, run by tests/support/jvm_drivers.py) runs members a, b, c of one group on a
6-partition topic; once the group is stable the caller calls enforceRebalance twice, the group polled and stable
between. Per call and member the telemetry says whether the member moved to a new generation (classic) or member
epoch (consumer), and which partitions it revoked; the application's own listener must have seen the same calls.
Measured (kafka-clients 4.2, Kafka 4.2), the same whether a follower or the classic leader calls, and for the first
and the second call:
- classic eager (range): every member moves to a new generation, revoking all its partitions and getting them back;
- classic cooperative-sticky: every member moves to a new generation; nothing revoked (an empty assign callback);
- KIP-848 (group.protocol=consumer): nothing; AsyncKafkaConsumer.enforceRebalance only logs a warning.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.jvm_drivers import run_driver
from tests.support.telemetry_log import TelemetryLog, partitions_of

PARTITIONS = 6
ROLES = ("a", "b", "c")


def _drive(kafka, tmp_path: Path, unique: str, protocol: str, caller: str) -> tuple[dict[str, Any], list[dict]]:
    """Run the driver; its result and the telemetry of the run (every event validated against the schema)."""
    topic = kafka.create_topic(f"jvm-enf-{unique}", partitions=PARTITIONS)
    telemetry = f"jvm-enf-telemetry-{unique}"
    out = tmp_path / "enforce.json"
    run_driver("EnforceDriver", [kafka.bootstrap_servers, topic, f"jvm-enf-{unique}", telemetry, protocol, caller,
                                 str(PARTITIONS), str(out)], tmp_path)
    result = json.loads(out.read_text())
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    try:
        agents = result["agents"].values()
        log.wait_for(lambda lg: all(any(e["kind"] == "state_transition" and e["body"]["reason"] == "close"
                                        for e in lg.of(agent)) for agent in agents), 60, "every member's close")
        return result, log.events
    finally:
        log.close()


def _outcome(events: list[dict], agent: str, window: dict[str, Any]) -> dict[str, Any]:
    """One member in one call's window, from its telemetry: a new generation/epoch?, its callbacks and what they
    held."""
    mine = sorted((e for e in events if e["agent_id"] == agent), key=lambda e: e["seq"])
    before = [e["generation"] for e in mine if e["event_time_ms"] < window["start_ms"]]
    during = [e for e in mine if window["start_ms"] <= e["event_time_ms"] <= window["end_ms"]]
    return {"new_generation": any(e["generation"] > before[-1] for e in during),
            "revoked": sorted(p for e in during if e["kind"] == "partitions_revoked" for p in partitions_of(e)),
            "callbacks": [e["kind"].removeprefix("partitions_") for e in during if e["kind"].startswith("partitions_")],
            "partitions": [sorted(partitions_of(e)) for e in during if e["kind"].startswith("partitions_")]}


def _owned_at(events: list[dict], agent: str, ms: int) -> list[int]:
    """The partitions the member's telemetry says it owned at wall-clock ``ms`` (eager revokes list them all)."""
    owned: set[int] = set()
    for e in sorted((e for e in events if e["agent_id"] == agent and e["event_time_ms"] < ms), key=lambda e: e["seq"]):
        if e["kind"] == "partitions_assigned":
            owned |= partitions_of(e)
        elif e["kind"] in ("partitions_revoked", "partitions_lost"):
            owned -= partitions_of(e)
    return sorted(owned)


def _listener_calls(result: dict[str, Any], role: str, window: dict[str, Any]) -> list[tuple[str, list[int]]]:
    return [(c["callback"], c["partitions"]) for c in result["calls"]
            if c["role"] == role and c["callback"] != "enforce"
            and window["start_ms"] <= c["time_ms"] <= window["end_ms"]]


def check(kafka, tmp_path: Path, unique: str, protocol: str, caller: str) -> None:
    """The measured outcome of two calls by ``caller`` under ``protocol``, and what the agent reported of them."""
    result, events = _drive(kafka, tmp_path, unique, protocol, caller)
    agents = result["agents"]
    for window in result["windows"]:
        for role in ROLES:
            agent = agents[role]
            got = _outcome(events, agent, window)
            owned = _owned_at(events, agent, window["start_ms"])
            # the client's own generation/epoch (read by the driver) moved exactly when the telemetry's did
            moved = window["generation_after"][role] > window["generation_before"][role]
            assert got["new_generation"] == moved, (role, window, got)
            # the application's listener got the calls the agent reported, with the same partitions
            reported = list(zip(got["callbacks"], got["partitions"]))
            assert _listener_calls(result, role, window) == reported, (role, window)
            if protocol == "range":  # every member rejoins a new generation, revoking all it owned, and gets it back
                assert got["new_generation"] and got["callbacks"] == ["revoked", "assigned"], (role, window, got)
                assert got["revoked"] == owned and _owned_at(events, agent, window["end_ms"] + 1) == owned, (role, got)
            elif protocol == "cooperative-sticky":  # every member rejoins a new generation, revoking nothing
                assert got["new_generation"] and reported == [("assigned", [])], (role, window, got)
            else:  # KIP-848: the client does nothing
                assert not got["new_generation"] and not got["callbacks"], (role, window, got)
    requests = [e["body"] for e in sorted(events, key=lambda e: e["seq"])
                if e["kind"] == "rebalance_requested" and e["agent_id"] == agents[caller]]
    assert [(r["reason"], r["accepted"]) for r in requests] == [(w["reason"], protocol != "consumer")
                                                               for w in result["windows"]]
    assert all(MECHANISM[protocol] in r["mechanism"] for r in requests), requests


# Each protocol's mechanism text names it (jvm_agent's EnforceOutcome).
MECHANISM = {"range": "(classic eager:", "cooperative-sticky": "(classic cooperative:",
             "consumer": "(KIP-848: not supported"}


@pytest.mark.parametrize("protocol", ["range", "cooperative-sticky", "consumer"])
def test_enforce_rebalance_by_a_follower(kafka, unique, tmp_path, protocol):
    """c joined last (a classic group's leader is its first member, a): the whole group rebalances anyway."""
    check(kafka, tmp_path, unique, protocol, "c")


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["range", "cooperative-sticky"])
def test_enforce_rebalance_by_the_leader(kafka, unique, tmp_path, protocol):
    """a, the classic group's leader, calls: the same outcome (KIP-848 has no leader, and nothing happens there)."""
    check(kafka, tmp_path, unique, protocol, "a")
