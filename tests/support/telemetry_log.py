"""Reads an agent's telemetry topic back, validating every event against the v1 schema."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import jsonschema
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from consumer_agent.contract import schema

VALIDATOR = jsonschema.Draft202012Validator(schema())
Event = dict[str, Any]


class TelemetryLog:
    """All events of one telemetry topic seen so far; ``wait_for`` polls until a condition holds."""

    def __init__(self, bootstrap_servers: str, topic: str) -> None:
        self.topic = topic
        self.events: list[Event] = []
        self._consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"reader-{topic}",
                                   "enable.auto.commit": False})
        self._assigned = False

    def _assign(self) -> bool:
        metadata = self._consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            return False
        self._consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in metadata.partitions])
        self._assigned = True
        return True

    def refresh(self, seconds: float = 0.3) -> None:
        if not self._assigned and not self._assign():
            time.sleep(seconds)
            return
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            msg = self._consumer.poll(0.05)
            if msg is None or msg.error():
                continue
            event = json.loads(msg.value())
            VALIDATOR.validate(event)  # every emitted event must satisfy the contract
            self.events.append(event)

    def wait_for(self, condition: Callable[["TelemetryLog"], Any], timeout: float = 30.0, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            self.refresh()
            result = condition(self)
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")

    def of(self, agent_id: str, *kinds: str) -> list[Event]:
        """One agent's events (of the given kinds), in seq order."""
        return sorted((e for e in self.events if e["agent_id"] == agent_id and (not kinds or e["kind"] in kinds)),
                      key=lambda e: e["seq"])

    def close(self) -> None:
        self._consumer.close()


def read_to_end(bootstrap_servers: str, topic: str) -> list[Event]:
    """Every event of a finished run's telemetry topic (validated): read until a second brings nothing new."""
    log = TelemetryLog(bootstrap_servers, topic)
    try:
        log.wait_for(lambda lg: lg.events, 30, "the telemetry")
        while True:
            before = len(log.events)
            log.refresh(1.0)
            if len(log.events) == before:
                return log.events
    finally:
        log.close()


def partitions_of(event: Event) -> set[int]:
    return {p["partition"] for p in event["body"]["partitions"]}


def owned_partitions(log: TelemetryLog, agent_id: str) -> set[int]:
    """The partitions an agent owns according to its own assigned/revoked/lost events."""
    owned: set[int] = set()
    for e in log.of(agent_id, "partitions_assigned", "partitions_revoked", "partitions_lost"):
        if e["kind"] == "partitions_assigned":
            owned = owned | partitions_of(e) if e["body"]["incremental"] else partitions_of(e)
        else:
            owned = owned - partitions_of(e) if e["body"]["incremental"] else set()
    return owned
