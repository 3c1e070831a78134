"""Commit-on-revoke against plain commits, in the same rebalance, duplicates counted by record id.

Outline: two groups read the same topic side by side, one plain, one with
``lens.commit.on.revoke``. In each, member A reads everything and commits every 100 records
(so a tail stays uncommitted); then a member B joins both groups at once. The plain group
re-delivers exactly the uncommitted tail of the partitions that moved (predicted from A's
own revoke event); the commit-on-revoke group re-delivers nothing. Then a member that closes
with a revoke already queued, and work in flight on worker threads and on asyncio tasks
(explicit processing mode).
"""
from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from consumer_agent import AsyncInstrumentedConsumer, InstrumentedConsumer
from tests.support.members import EAGER, PROTOCOLS, Member, duplicates, settle, wait_until
from tests.support.telemetry_log import TelemetryLog

PARTITIONS = 4


def config(kafka, group: str, telemetry: str, protocol: str, **extra) -> dict:
    return kafka.consumer_config(group, **PROTOCOLS[protocol], **{
        "enable.auto.commit": False, "lens.telemetry.topic": telemetry, **extra})


@pytest.mark.parametrize("protocol", ["range", "consumer"])
def test_commit_on_revoke_removes_the_duplicates_plain_commits_leave(kafka, unique, protocol):
    topic = kafka.create_topic(f"agent-cor-{unique}", partitions=PARTITIONS)
    telemetry = f"telemetry-cor-{unique}"
    ids = kafka.seed_partitions(topic, PARTITIONS, 257)  # A commits every 100 records: 28 stay uncommitted
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    groups = {mode: config(kafka, f"g-{mode}-{unique}", telemetry, protocol, **{"lens.commit.on.revoke": mode})
              for mode in (False, True)}
    first = {mode: Member(cfg, topic, commit_every=100) for mode, cfg in groups.items()}
    members = list(first.values())
    try:
        wait_until(lambda: all(m.count() == len(ids) for m in first.values()), 30, "both A members to read all")
        members += [Member(cfg, topic, commit_every=100) for cfg in groups.values()]  # the same rebalance, twice
        for mode, a in first.items():
            revoke = log.wait_for(lambda lg: lg.of(a.agent_id, "partitions_revoked"), 40, "A's revoke")[0]["body"]
            group_members = [a, members[2 + int(mode)]]
            settle(group_members, ids)
            dups = duplicates(*group_members)
            if mode:
                assert dups == 0
                assert revoke["commit_on_revoke"]["committed"] is True
                assert revoke["commit_on_revoke"]["timed_out"] is False
                assert all(p["committed_offset"] == p["position"] == 257 for p in revoke["partitions"])
                commits = [e["body"] for e in log.of(a.agent_id, "commit") if e["body"]["in_revoke"]]
                # one synchronous commit, unless A's own last commit already covered the revoked partitions
                assert len(commits) <= 1 and all(c["sync"] and c["error"] is None for c in commits)
                if protocol in EAGER:
                    assert len(commits) == 1
            else:
                predicted = sum(p["position"] - max(p["committed_offset"], 0) for p in revoke["partitions"])
                assert revoke["commit_on_revoke"] is None
                assert dups == predicted
                if protocol in EAGER:
                    assert dups > 0  # every partition restarts from its last commit
    finally:
        for m in members:
            m.stop()
        log.close()


def test_close_with_a_revoke_already_queued_commits_before_leaving(kafka, unique):
    """Eager: A closes while its revoke is queued (B just left). librdkafka leaves the group before it
    serves that revoke, where a commit fails (UNKNOWN_MEMBER_ID); the agent commits before close instead."""
    topic = kafka.create_topic(f"agent-corc-{unique}", partitions=PARTITIONS)
    telemetry = f"telemetry-corc-{unique}"
    cfg = config(kafka, f"g-{unique}", telemetry, "range", **{"lens.commit.on.revoke": True})
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    a = InstrumentedConsumer(cfg)
    a.subscribe([topic])
    members = [Member(cfg, topic)]
    seen: list[str] = []

    def a_reads(count: int) -> bool:
        msg = a.poll(0.05)
        if msg is not None and not msg.error():
            seen.append(msg.value().decode())
        return len(seen) >= count

    try:
        wait_until(lambda: a_reads(0) and len(a.assignment()) == PARTITIONS // 2, 30, "A and B to share the topic")
        ids = kafka.seed_partitions(topic, PARTITIONS, 50)
        wait_until(lambda: a_reads(len(ids) // 2), 30, "A to read its half")  # and commit none of it
        members[0].stop()
        time.sleep(2.5)  # A's heartbeat learns of the rebalance and queues the revoke; A does not poll
        a.close()
        members.append(Member(cfg, topic))
        settle(members[1:], kafka.seed_partitions(topic, PARTITIONS, 1, start=50))
        counts = Counter(seen + members[0].seen + members[1].seen)
        assert ids <= set(counts) and max(counts.values()) == 1
        log.wait_for(lambda lg: [e for e in lg.of(a.agent_id, "state_transition") if e["body"]["reason"] == "close"
                                 and e["body"]["from_state"] == "leaving"], 20, "A's close")
        commit = log.of(a.agent_id, "commit")[-1]["body"]
        assert commit["error"] is None and {o["offset"] for o in commit["offsets"]} == {50}
        assert log.of(a.agent_id, "partitions_revoked")[-1]["body"]["commit_on_revoke"]["committed"] is True
    finally:
        a.close()
        for m in members:
            m.stop()
        log.close()


def test_commit_on_revoke_waits_for_worker_threads(kafka, unique):
    """Explicit mode: records still on worker threads at the revoke are finished, then committed."""
    topic = kafka.create_topic(f"agent-corw-{unique}", partitions=PARTITIONS)
    telemetry = f"telemetry-corw-{unique}"
    ids = kafka.seed_partitions(topic, PARTITIONS, 60)
    cfg = config(kafka, f"g-{unique}", telemetry, "range", **{
        "lens.commit.on.revoke": True, "lens.processing": "explicit"})
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    a = Member(cfg, topic, workers=4, work_s=0.02)  # 240 records x 20 ms / 4 threads: ~1.2 s of work
    members = [a]
    try:
        wait_until(lambda: a.count() >= 10, 30, "A to start processing")
        members.append(Member(cfg, topic, workers=4, work_s=0.02))
        revoke = log.wait_for(lambda lg: lg.of(a.agent_id, "partitions_revoked"), 40, "A's revoke")[0]["body"]
        settle(members, ids)
        assert duplicates(*members) == 0
        hold = revoke["commit_on_revoke"]
        assert hold["committed"] is True and hold["timed_out"] is False and hold["waited_ms"] > 0
        assert all(p["last_processed_offset"] == p["committed_offset"] - 1 for p in revoke["partitions"])
    finally:
        for m in members:
            m.stop()
        log.close()


def test_async_consumer_commit_on_revoke_waits_for_tasks(kafka, unique):
    """AsyncInstrumentedConsumer: the revoke waits for asyncio tasks still processing revoked records."""
    topic = kafka.create_topic(f"agent-cora-{unique}", partitions=PARTITIONS)
    telemetry = f"telemetry-cora-{unique}"
    ids = kafka.seed_partitions(topic, PARTITIONS, 60)
    cfg = config(kafka, f"g-{unique}", telemetry, "cooperative-sticky", **{"lens.commit.on.revoke": True})
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    seen: list[str] = []
    joiner: list[Member] = []

    async def handle(msg) -> None:
        await asyncio.sleep(0.02)
        seen.append(msg.value().decode())

    async def run() -> str:
        consumer = AsyncInstrumentedConsumer(cfg)
        await consumer.subscribe([topic])
        tasks = []
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                msg = await consumer.poll(0.05)
                if msg is not None and not msg.error():
                    tasks.append(consumer.process(msg, handle(msg)))
                if len(seen) >= 10 and not joiner:
                    joiner.append(Member({**cfg, "lens.processing": "on_next_poll"}, topic))
                if joiner and ids <= set(seen) | set(joiner[0].seen):
                    break
            await asyncio.gather(*tasks)
        finally:
            await consumer.close()
        return consumer.agent_id

    try:
        agent_id = asyncio.run(run())
        b = joiner[0]
        settle([b], set(b.seen) | ids - set(seen))
        counts = Counter(seen + list(b.seen))
        assert set(counts) == ids and max(counts.values()) == 1
        revoke = log.wait_for(lambda lg: [e for e in lg.of(agent_id, "partitions_revoked")
                                          if e["body"]["commit_on_revoke"]], 20, "the task consumer's revoke")
        hold = revoke[0]["body"]["commit_on_revoke"]
        assert hold["committed"] is True and hold["timed_out"] is False
    finally:
        for m in joiner:
            m.stop()
        log.close()
