"""A rebalance the telemetry never told: the telemetry cluster is away (a closed port) while a
group forms and rebalances, for longer than the agents' buffers last, then comes back.

Member A's telemetry goes through a ``TcpGate`` that opens late; member B's goes straight to
the broker. A forms the group alone, B joins (an eager range rebalance: A gives both
partitions back and keeps one), and A keeps polling until its 50-event buffer has dropped
everything from before the rebalance (progress every 50 ms). Then the gate opens: A's newest
events and an ``agent_health`` event reporting every drop arrive. What really happened is
recorded from the members' own rebalance callbacks (the host's view), to hold gold against:
gold may miss handoffs whose telemetry was lost, never invent one.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from confluent_kafka import Consumer, TopicPartition

from consumer_agent import InstrumentedConsumer
from lens_runtime.kafka_broker import free_port
from tests.support.kafka_cluster import KafkaCluster
from tests.support.tcp_gate import TcpGate
from tests.support.telemetry_log import TelemetryLog

CAPACITY = 50


@dataclass
class OutageRun:
    group: str
    agents: dict[str, str] = field(default_factory=dict)       # "A"/"B" -> agent id
    # (time, member, assigned|revoked, partition)
    owners: list[tuple[float, str, str, int]] = field(default_factory=list)
    dropped: int = 0   # A's final dropped_total, as its telemetry_stats() says after close

    def true_handoffs(self) -> set[tuple[int, str, str]]:
        """(partition, previous agent, next agent) of every partition that changed hands (or was
        given back to its owner), from the callbacks."""
        owner: dict[int, str] = {}
        released: dict[int, str] = {}
        out = set()
        for _t, member, what, partition in sorted(self.owners):
            agent = self.agents[member]
            if what == "revoked":
                released[partition] = owner.pop(partition, agent)
            else:
                if partition in released:
                    out.add((partition, released.pop(partition), agent))
                owner[partition] = agent
        return out


def run_outage(kafka: KafkaCluster, telemetry_topic: str) -> OutageRun:
    """Play the outage (see the module docstring); the members are closed when it returns."""
    run = OutageRun(group=f"outage-{uuid.uuid4().hex[:6]}")
    source = kafka.create_topic(f"outage-src-{uuid.uuid4().hex[:6]}", partitions=2)
    kafka.seed(source, (f"r-{i}" for i in range(2_000)))
    host, port = kafka.bootstrap_servers.rsplit(":", 1)
    gate = TcpGate(free_port(), (host, int(port)))

    def callbacks(member: str):
        def note(what: str):
            def callback(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
                run.owners.extend((time.time(), member, what, p.partition) for p in partitions)
            return callback
        return {"on_assign": note("assigned"), "on_revoke": note("revoked")}

    a = InstrumentedConsumer(kafka.consumer_config(run.group, **{
        "lens.telemetry.topic": telemetry_topic, "lens.telemetry.bootstrap.servers": f"127.0.0.1:{gate.port}",
        "lens.telemetry.reconnect.backoff.max.ms": 500, "lens.buffer.max.events": CAPACITY,
        "lens.progress.interval.ms": 50}))
    b = InstrumentedConsumer(kafka.consumer_config(run.group, **{"lens.telemetry.topic": telemetry_topic,
                                                                 "lens.progress.interval.ms": 500}))
    run.agents = {"A": a.agent_id, "B": b.agent_id}
    try:
        a.subscribe([source], **callbacks("A"))
        _poll_until(lambda: len(a.assignment()) == 2, a)
        b.subscribe([source], **callbacks("B"))
        _poll_until(lambda: len(b.assignment()) == 1 and len(a.assignment()) == 1, a, b)
        rebalanced_at = a.telemetry_stats()["dropped"]
        # every event A made up to the rebalance must fall out of its buffer: CAPACITY more events
        _poll_until(lambda: a.telemetry_stats()["dropped"] > rebalanced_at + 2 * CAPACITY, a, b)
        gate.open()  # the telemetry cluster is back: A's buffer drains
        _poll_until(lambda: a.telemetry_stats()["buffered"] == 0, a, b)
    finally:
        b.close()
        a.close()  # reports the drops in a last agent_health event and flushes it
    run.dropped = a.telemetry_stats()["dropped"]
    log = TelemetryLog(kafka.bootstrap_servers, telemetry_topic)
    try:
        log.wait_for(lambda found: any(e["body"]["dropped_total"] == run.dropped
                                       for e in found.of(run.agents["A"], "agent_health")),
                     timeout=60, what=f"A's agent_health event reporting {run.dropped} drops")
    finally:
        log.close()
        gate.close()
    return run


def _poll_until(condition, *consumers: Consumer, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the outage run did not get there in time"
        for c in consumers:
            c.poll(0.05)
