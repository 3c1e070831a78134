"""Real multi-member groups under every assignor: assigned/revoked offsets, first fetch, SIGKILL.

Outline (per protocol): member A (a thread here) reads 4x100 records and commits; member C
(a child process) joins, so A's telemetry must show the right partitions revoked with
position 100 / last processed 99 / committed 100 and C's must show the rest assigned; new
records then show C's first fetch at the committed offset 100; C is SIGKILLed and its
partitions must reappear in A's assigned events, A's first fetch again at 100 (C never
committed: those records are the duplicates the pipelines will count).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.members import EAGER, PROTOCOLS, Member, wait_until
from tests.support.telemetry_log import TelemetryLog, owned_partitions, partitions_of

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_rebalance_events_show_partitions_offsets_and_sigkill(kafka, unique, protocol):
    topic = kafka.create_topic(f"agent-grp-{unique}", partitions=PARTITIONS)
    telemetry = f"telemetry-{unique}"
    kafka.seed_partitions(topic, PARTITIONS, 100)
    config = kafka.consumer_config(f"g-{unique}", **PROTOCOLS[protocol], **{
        "enable.auto.commit": False, "lens.telemetry.topic": telemetry, "lens.progress.interval.ms": 1000})
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    a = Member(config, topic)
    child = None
    try:
        wait_until(lambda: a.count() == 400, 30, "A to read 400 records")
        a.call(lambda c: c.commit(asynchronous=False))
        child = subprocess.Popen([sys.executable, "-m", "tests.support.child_member", json.dumps(config), topic],
                                 cwd=ROOT, stdout=subprocess.PIPE, text=True)
        child_id = child.stdout.readline().strip()
        assert len(child_id) == 32, child_id

        child_parts = log.wait_for(
            lambda lg: len(owned_partitions(lg, child_id)) == 2 and owned_partitions(lg, child_id),
            40, "the child to own 2 partitions")
        a_parts = log.wait_for(
            lambda lg: owned_partitions(lg, a.agent_id) if len(owned_partitions(lg, a.agent_id)) == 2 else None,
            20, "A to own 2 partitions")
        assert child_parts.isdisjoint(a_parts) and child_parts | a_parts == set(range(PARTITIONS))

        revoked = log.of(a.agent_id, "partitions_revoked")
        assert len(revoked) == 1
        body = revoked[0]["body"]
        assert body["incremental"] is (protocol not in EAGER)
        assert partitions_of(revoked[0]) == (set(range(PARTITIONS)) if protocol in EAGER else child_parts)
        for p in body["partitions"]:
            assert (p["position"], p["last_processed_offset"], p["committed_offset"]) == (100, 99, 100), p
        assert body["commit_on_revoke"] is None and body["callback_ms"] >= 0

        kafka.seed_partitions(topic, PARTITIONS, 10, start=100)
        fetched = log.wait_for(lambda lg: _first_fetch(lg, child_id) if set(_first_fetch(lg, child_id)) == child_parts
                               else None, 30, "the child's first fetches")
        assert set(fetched.values()) == {100}  # the new owner starts at what A committed

        child.kill()  # SIGKILL: no revoke, no leave; the coordinator notices at session timeout
        child.wait(10)
        moved = log.wait_for(lambda lg: _assigned_after(lg, a.agent_id, revoked[0]["seq"]) >= child_parts
                             and _assigned_after(lg, a.agent_id, revoked[0]["seq"]), 40,
                             "the killed member's partitions to move to A")
        assert child_parts <= moved
        # A re-reads the child's 2x10 new records; an eager rebalance also restarts A's own 2 partitions
        # from A's last commit (100), so their 2x10 new records come again too.
        expected = 400 + 20 + 10 * len(child_parts) + (20 if protocol in EAGER else 0)
        wait_until(lambda: a.count() == expected, 30, f"A to reach {expected} records")
        a_first = log.wait_for(lambda lg: _first_fetch(lg, a.agent_id, revoked[0]["seq"])
                               if child_parts <= set(_first_fetch(lg, a.agent_id, revoked[0]["seq"])) else None,
                               20, "A's first fetches of the moved partitions")
        assert all(a_first[p] == 100 for p in child_parts)  # C never committed: A re-reads from 100
        kinds = {e["kind"] for e in log.of(a.agent_id)}
        assert {"member_config", "state_transition", "progress", "commit", "first_fetch"} <= kinds
        assert all(e["body"]["allowed"] for e in log.of(a.agent_id, "state_transition")), \
            [e["body"] for e in log.of(a.agent_id, "state_transition")]
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait(10)
        a.stop()
        log.close()


def _assigned_after(log: TelemetryLog, agent_id: str, seq: int) -> set[int]:
    out: set[int] = set()
    for e in log.of(agent_id, "partitions_assigned"):
        if e["seq"] > seq:
            out |= partitions_of(e)
    return out


def _first_fetch(log: TelemetryLog, agent_id: str, after_seq: int = -1) -> dict[int, int]:
    return {e["body"]["partition"]: e["body"]["offset"]
            for e in log.of(agent_id, "first_fetch") if e["seq"] > after_seq}
