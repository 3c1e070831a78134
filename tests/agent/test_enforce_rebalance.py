"""enforce_rebalance on the real broker: what toggling the sentinel pattern does, per protocol.

Outline: two members own 2 partitions each; A calls enforce_rebalance twice (each call
subscribes with a fresh sentinel pattern added, then without it). After each call we read, from both
members, the generation (classic) or member epoch (KIP-848) and, from their telemetry,
which partitions were revoked. Measured (Kafka 4.2, librdkafka 2.16):
- KIP-848: both calls move BOTH members to a new epoch, nothing is revoked;
- cooperative-sticky: the first call rebalances the group (new generation on both)
  without revoking anything; the second does nothing;
- eager: each call revokes all of A's partitions; the group moves to a new generation,
  revoking B's too, exactly when A leads it.
A repeat before the first call's rebalance shows (same generation) is refused, as is a call
while joining,
and member_config keeps the application's topics (the sentinel is never reported).
"""
from __future__ import annotations

import time
from typing import Any

import pytest

from consumer_agent.group_metadata import generation_from_metadata
from tests.support.members import EAGER, PROTOCOLS, Member
from tests.support.telemetry_log import TelemetryLog, owned_partitions, partitions_of

SETTLE_S = 6.0  # > one KIP-848 heartbeat (5 s) and a classic join round with 1 s heartbeats


def generation(member: Member) -> int:
    return member.call(lambda c: generation_from_metadata(c.consumer_group_metadata()))


def enforce_and_measure(log: TelemetryLog, caller: Member, members: list[Member]) -> dict[str, Any]:
    """One call and an immediate repeat; per member: new generation?, partitions revoked."""
    log.refresh(0.5)
    last_seq = {m.agent_id: log.of(m.agent_id)[-1]["seq"] for m in members}
    before = {m.agent_id: generation(m) for m in members}
    # no poll between the two calls: only a generation already moved can let the repeat through
    accepted, repeated, moved = caller.call(lambda c: (c.enforce_rebalance("measure"), c.enforce_rebalance("repeat"),
                                                       generation_from_metadata(c.consumer_group_metadata())))
    time.sleep(SETTLE_S)
    log.refresh(1.5)
    return {
        "accepted": accepted, "repeat_accepted": repeated, "moved_at_repeat": moved > before[caller.agent_id],
        "new_generation": {m.agent_id: generation(m) > before[m.agent_id] for m in members},
        "revoked": {m.agent_id: {p for e in log.of(m.agent_id, "partitions_revoked") if e["seq"] > last_seq[m.agent_id]
                                 for p in partitions_of(e)} for m in members},
    }


def start_group(kafka, unique: str, protocol: str) -> tuple[TelemetryLog, Member, Member, str]:
    topic = kafka.create_topic(f"agent-enf-{unique}", partitions=4)
    telemetry = f"telemetry-enf-{unique}"
    config = kafka.consumer_config(f"g-{unique}", **PROTOCOLS[protocol], **{
        "lens.telemetry.topic": telemetry, "lens.progress.interval.ms": 500})
    return TelemetryLog(kafka.bootstrap_servers, telemetry), Member(config, topic), Member(config, topic), topic


def wait_two_each(log: TelemetryLog, a: Member, b: Member) -> None:
    log.wait_for(lambda lg: len(owned_partitions(lg, a.agent_id)) == 2 and len(owned_partitions(lg, b.agent_id)) == 2,
                 40, "two partitions each")
    time.sleep(1.5)


# consumer (KIP-848) in the default suite; the three classic assignors slow (~20 s each)
@pytest.mark.parametrize("protocol", [p if p == "consumer" else pytest.param(p, marks=pytest.mark.slow)
                                      for p in PROTOCOLS])
def test_enforce_rebalance_measured(kafka, unique, protocol):
    log, a, b, topic = start_group(kafka, unique, protocol)
    members = [a, b]
    try:
        # refused while joining; a member that already got its partitions (a fast join) may accept
        accepted, assigned = b.call(lambda c: (c.enforce_rebalance("while joining"), c.assignment()))
        assert accepted is False or assigned
        wait_two_each(log, a, b)
        owned = {m.agent_id: owned_partitions(log, m.agent_id) for m in members}
        calls = [enforce_and_measure(log, a, members) for _ in range(2)]

        for call in calls:
            assert call["accepted"] is True, calls
            # the repeat is refused while the first call's rebalance has not shown (same generation)
            assert not call["repeat_accepted"] or call["moved_at_repeat"], calls
        assert {m.agent_id: owned_partitions(log, m.agent_id) for m in members} == owned  # owners never change
        new_gen = [call["new_generation"] for call in calls]
        revoked = [call["revoked"] for call in calls]
        if protocol == "consumer":
            assert new_gen == [{a.agent_id: True, b.agent_id: True}] * 2
            assert revoked == [{a.agent_id: set(), b.agent_id: set()}] * 2
        elif protocol == "cooperative-sticky":
            assert new_gen == [{a.agent_id: True, b.agent_id: True}, {a.agent_id: False, b.agent_id: False}]
            assert revoked == [{a.agent_id: set(), b.agent_id: set()}] * 2
        else:
            assert protocol in EAGER
            for gen, rev in zip(new_gen, revoked):
                assert rev[a.agent_id] == owned[a.agent_id]  # eager: A's own partitions cycle every time
                # the group-wide rebalance (B revoked too) happens exactly when the generation moved
                assert gen[a.agent_id] == gen[b.agent_id] == (rev[b.agent_id] == owned[b.agent_id])
                assert rev[b.agent_id] in (set(), owned[b.agent_id])

        requests = log.of(a.agent_id, "rebalance_requested")
        assert [(e["body"]["reason"], e["body"]["accepted"]) for e in requests] == [
            ("measure", True), ("repeat", calls[0]["repeat_accepted"]), ("measure", True),
            ("repeat", calls[1]["repeat_accepted"])]
        assert all(e["body"]["mechanism"].startswith("sentinel-pattern-toggle") for e in requests)
        configs = [e["body"] for m in members for e in log.of(m.agent_id, "member_config")]
        assert configs and all(c["topics"] == [topic] and c["pattern"] is None for c in configs)
    finally:
        for m in members:
            m.stop()
        log.close()

