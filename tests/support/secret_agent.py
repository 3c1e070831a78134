"""Real agents on a secured cluster with secrets in their config: what the secrets tests then
look for in every output.

Two ``InstrumentedConsumer`` members of one group authenticate to the broker's SASL_PLAINTEXT
listener with the session's password (their own consumer and the agent's telemetry producer,
which inherits ``sasl.*`` and is also given the password as ``lens.telemetry.sasl.password``),
carry a planted ``ssl.key.password``, and turn librdkafka's debug logging on for the telemetry
producer. They read a topic through one rebalance (the second member joins) and close. The
client id carries a marker that the agent does emit: the positive control, so a search that
finds no secret is known to be able to find things.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field

from consumer_agent import InstrumentedConsumer
from tests.support.kafka_cluster import KafkaCluster

RECORDS = 400
JOIN_AFTER_S = 12


@dataclass
class SecretRun:
    """What the run planted and what it made."""

    secrets: tuple[str, ...]  # the SASL password (it really authenticates) and a planted key password
    marker: str               # in client.id: emitted, so every search must find it
    group: str
    agent_ids: list[str] = field(default_factory=list)
    log_lines: list[str] = field(default_factory=list)  # every log record of the run, DEBUG included


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(self.format(record))


def run_secret_agents(kafka: KafkaCluster, telemetry_topic: str, group: str) -> SecretRun:
    """Two agents of ``group`` on the SASL listener, one rebalance, closed; their telemetry is
    on ``telemetry_topic`` (sent through the SASL listener)."""
    assert kafka.sasl is not None, "the embedded broker's SASL listener is needed"
    run = SecretRun(secrets=(kafka.sasl.password, f"planted-{uuid.uuid4().hex}"),
                    marker=f"visible-{uuid.uuid4().hex[:12]}", group=group)
    source = kafka.create_topic(f"secret-src-{uuid.uuid4().hex[:6]}", partitions=2)
    kafka.seed(source, (f"r-{i}" for i in range(RECORDS)))
    handler = _Collect(run.log_lines)
    loggers = [logging.getLogger(), logging.getLogger("consumer_agent")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(handler)

    def member(n: int) -> InstrumentedConsumer:
        return InstrumentedConsumer({
            **kafka.sasl.client_config(), "group.id": group, "client.id": f"{run.marker}-{n}",
            "auto.offset.reset": "earliest", "ssl.key.password": run.secrets[1],
            "lens.telemetry.topic": telemetry_topic, "lens.telemetry.sasl.password": kafka.sasl.password,
            "lens.telemetry.debug": "all", "lens.progress.interval.ms": 500})

    try:
        first = member(1)
        first.subscribe([source])
        seen = _read(first, RECORDS // 2)
        # the join comes after the group formed (more than the pipeline's 10 s episode gap), so
        # it is an episode of its own, with costs per member: the report names the members then
        joined_after = time.monotonic() + JOIN_AFTER_S
        while time.monotonic() < joined_after:
            first.poll(0.1)
        second = member(2)
        second.subscribe([source])
        deadline = time.monotonic() + 60
        while len(second.assignment()) == 0 and time.monotonic() < deadline:  # the join rebalances the group
            first.poll(0.1)
            second.poll(0.1)
        assert second.assignment(), "the second member got no partition"
        for _ in range(30):
            first.poll(0.05)
            second.poll(0.05)
        assert seen > 0
        run.agent_ids = [first.agent_id, second.agent_id]
        for consumer in (second, first):
            consumer.close()
            assert consumer.telemetry_stats()["dropped"] == 0, consumer.telemetry_stats()
    finally:
        logging.getLogger().removeHandler(handler)
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
    return run


def _read(consumer: InstrumentedConsumer, records: int, timeout_s: float = 60) -> int:
    seen, deadline = 0, time.monotonic() + timeout_s
    while seen < records and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            seen += 1
    return seen
