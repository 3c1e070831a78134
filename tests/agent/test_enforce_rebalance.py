"""enforce_rebalance on the real broker: what re-subscribing the unchanged subscription does, per protocol.

Outline: two members own 2 partitions each; A calls enforce_rebalance. We measure from
both members' telemetry which partitions were revoked and whether the group moved to a new
generation. Eager: A's own partitions are revoked and re-assigned (and the group
rebalances only when A leads it, which shows as a new generation on both members).
Cooperative-sticky and KIP-848: nothing is revoked and the generation does not move
(librdkafka treats an unchanged subscription as no change). A request during a
rebalance is refused.
"""
from __future__ import annotations

import time

import pytest

from tests.agent.members import PROTOCOLS, Member
from tests.agent.telemetry_log import TelemetryLog, partitions_of
from tests.agent.test_group_rebalances import _owned


def generation(log: TelemetryLog, agent_id: str) -> int:
    return log.of(agent_id)[-1]["generation"]


@pytest.mark.parametrize("protocol", ["range", "cooperative-sticky", "consumer"])
def test_enforce_rebalance_measured(kafka, unique, protocol):
    topic = kafka.create_topic(f"agent-enf-{unique}", partitions=4)
    telemetry = f"telemetry-enf-{unique}"
    config = kafka.consumer_config(f"g-{unique}", **PROTOCOLS[protocol], **{
        "lens.telemetry.topic": telemetry, "lens.progress.interval.ms": 500})
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    a = Member(config, topic)
    b = Member(config, topic)
    members = [a, b]
    try:
        assert b.call(lambda c: c.enforce_rebalance("while joining")) is False
        log.wait_for(lambda lg: len(_owned(lg, a.agent_id)) == 2 and len(_owned(lg, b.agent_id)) == 2, 40,
                     "two partitions each")
        time.sleep(1.5)  # the next progress events carry the settled generation
        log.refresh(1.0)
        before = {m.agent_id: (_owned(log, m.agent_id), generation(log, m.agent_id), log.of(m.agent_id)[-1]["seq"])
                  for m in members}
        assert a.call(lambda c: c.enforce_rebalance("measure")) is True
        time.sleep(6)
        log.refresh(1.5)
        request = log.of(a.agent_id, "rebalance_requested")
        assert [e["body"]["accepted"] for e in request] == [True] and request[0]["body"]["reason"] == "measure"

        def revoked_since(agent_id: str) -> set[int]:
            return {p for e in log.of(agent_id, "partitions_revoked") if e["seq"] > before[agent_id][2]
                    for p in partitions_of(e)}
        new_generation = {m.agent_id: generation(log, m.agent_id) > before[m.agent_id][1] for m in members}
        assert _owned(log, a.agent_id) == before[a.agent_id][0]  # owners unchanged in every protocol
        if protocol == "range":
            assert revoked_since(a.agent_id) == before[a.agent_id][0]  # eager: A's own partitions cycled
            # the group-wide rebalance happens exactly when the coordinator started a new generation
            assert bool(revoked_since(b.agent_id)) == new_generation[b.agent_id]
        else:
            assert revoked_since(a.agent_id) == set() and revoked_since(b.agent_id) == set()
            assert not any(new_generation.values())
    finally:
        for m in members:
            m.stop()
        log.close()
