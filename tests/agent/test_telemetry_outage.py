"""The telemetry cluster away: the host keeps consuming, the buffer stays bounded, drops are reported later.

Outline: the agent's telemetry bootstrap points at a closed loopback port. The host reads
20k records while the agent produces progress events every 50 ms into a 50-event buffer:
nothing blocks, the buffer never exceeds 50, drops are counted. Then the port opens
(forwarding to the broker): the buffered events and an agent_health event reporting every
drop arrive, and the seq gaps in the topic equal the reported drops exactly.
"""
from __future__ import annotations

import time

from confluent_kafka import Consumer

from consumer_agent import InstrumentedConsumer
from lens_runtime.kafka_broker import free_port
from tests.support.tcp_gate import TcpGate
from tests.support.telemetry_log import TelemetryLog

RECORDS = 20_000
CAPACITY = 50


def read_all(consumer: Consumer, records: int, timeout: float = 60) -> tuple[int, float]:
    seen, slowest, deadline = 0, 0.0, time.monotonic() + timeout
    while seen < records and time.monotonic() < deadline:
        start = time.monotonic()
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            if seen:  # the first poll includes the group join
                slowest = max(slowest, time.monotonic() - start)
            seen += 1
        assert consumer.telemetry_stats()["buffered"] <= CAPACITY
    return seen, slowest


def test_unreachable_telemetry_cluster_never_blocks_and_drops_are_reported(kafka, unique):
    topic = kafka.create_topic(f"agent-out-{unique}", partitions=2)
    kafka.seed(topic, (f"r-{i}" for i in range(RECORDS)))
    telemetry = f"telemetry-out-{unique}"
    port = free_port()
    host, broker_port = kafka.bootstrap_servers.rsplit(":", 1)
    gate = TcpGate(port, (host, int(broker_port)))
    consumer = InstrumentedConsumer(kafka.consumer_config(f"g-{unique}", **{
        "lens.telemetry.topic": telemetry, "lens.telemetry.bootstrap.servers": f"127.0.0.1:{port}",
        "lens.telemetry.reconnect.backoff.max.ms": 500, "lens.buffer.max.events": CAPACITY,
        "lens.progress.interval.ms": 50}))
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    try:
        consumer.subscribe([topic])
        seen, slowest = read_all(consumer, RECORDS)
        assert seen == RECORDS
        assert slowest < 0.5, f"a poll with records waiting took {slowest:.3f} s"
        while consumer.telemetry_stats()["dropped"] == 0:  # progress events keep coming: the buffer overflows
            consumer.poll(0.05)
        stats = consumer.telemetry_stats()
        assert stats["buffered"] <= CAPACITY and stats["dropped"] > 0

        gate.open()  # the telemetry cluster is back
        deadline = time.monotonic() + 60
        final = None
        while final is None and time.monotonic() < deadline:
            consumer.poll(0.05)
            log.refresh(0.05)
            dropped = consumer.telemetry_stats()["dropped"]
            final = next((e for e in log.of(consumer.agent_id, "agent_health")
                          if e["body"]["dropped_total"] == dropped), None)
        assert final is not None, "no agent_health event reported all the drops"
        body = final["body"]
        assert body["dropped_total"] >= stats["dropped"]
        # drops can go on while the backlog drains (producer queue full), so an earlier health event may have
        # been delivered first; since_last counts from the last one acknowledged before this one was made,
        # which is at most the newest one in the log before it (with none, since_last is the total)
        earlier = [e["body"]["dropped_total"] for e in log.of(consumer.agent_id, "agent_health")
                   if e["seq"] < final["seq"]]
        assert body["dropped_total"] - max(earlier, default=0) <= body["dropped_since_last"] <= body["dropped_total"]
        assert body["buffer_capacity"] == CAPACITY
        seqs = {e["seq"] for e in log.of(consumer.agent_id) if e["seq"] < final["seq"]}
        assert final["seq"] - len(seqs) == body["dropped_total"]  # every gap in seq is a counted drop
    finally:
        consumer.close()
        gate.close()
        log.close()
