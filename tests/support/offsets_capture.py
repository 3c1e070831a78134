"""Real consumer groups on the embedded broker, then its ``__consumer_offsets`` read back raw:
the records the broker source's decoder and history are checked on.

One run drives, one after another: a classic eager group (range), a classic cooperative-sticky
group, a classic group of static members (one restarted under its instance id), and KIP-848
groups (group.protocol=consumer), plain and static; members join and leave, and commit explicit
offsets at each step (so each commit's offset says which step wrote it). A transaction that
commits offsets and aborts shows ``read_committed`` at work. ``Capture.steps`` keeps what the
driver saw (who held what after each step, and when), the truth the history is checked against.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from pipelines.broker_log.offsets_topic import RawRecord, read_offsets_topic
from pipelines.broker_log.topic_ids import ids_from_admin
from tests.support.kafka_cluster import KafkaCluster

PARTITIONS = 4
CLASSIC = {"heartbeat.interval.ms": 300, "session.timeout.ms": 6000, "enable.auto.commit": False}
CONSUMER_PROTOCOL = {"group.protocol": "consumer", "enable.auto.commit": False}
ABORTED_OFFSET = 999_999  # committed in a transaction that aborts: never seen with read_committed


@dataclass
class Step:
    group: str
    what: str
    at_ms: int  # when the driver saw the step done (before its commits)
    owners: dict[str, list[int]]  # member name -> partitions it held then
    member_ids: dict[str, str]  # member name -> its member id (the one the broker's records carry)
    committed: dict[int, int]  # partition -> offset committed right after


@dataclass
class Capture:
    topic: str
    groups: dict[str, str]  # scenario -> group id
    steps: list[Step] = field(default_factory=list)
    records: list[RawRecord] = field(default_factory=list)
    topic_ids: dict[str, str] = field(default_factory=dict)  # id -> name, from the Admin API
    started_ms: int = 0


class _Driver:
    def __init__(self, kafka: KafkaCluster, capture: Capture) -> None:
        self.kafka, self.capture = kafka, capture
        self.members: dict[str, Consumer] = {}
        self.commits = 0

    def join(self, scenario: str, name: str, settings: dict[str, Any]) -> None:
        consumer = self.kafka.consumer(self.capture.groups[scenario], **settings)
        consumer.subscribe([self.capture.topic])
        self.members[name] = consumer

    def leave(self, name: str) -> None:
        self.members.pop(name).close()

    def settle(self, scenario: str, what: str, expected: dict[str, int], timeout_s: float = 60) -> None:
        """Poll every member until each holds ``expected[name]`` partitions, then commit and record the step."""
        deadline = time.monotonic() + timeout_s
        while True:
            for consumer in self.members.values():
                consumer.poll(0.05)
            held = {n: sorted(tp.partition for tp in c.assignment()) for n, c in self.members.items()}
            if {n: len(p) for n, p in held.items()} == expected:
                break
            assert time.monotonic() < deadline, f"{scenario}/{what}: members hold {held}, expected {expected}"
        settled_ms = int(time.time() * 1000)  # before the commits: the next step can follow within the millisecond
        self.commits += 1
        committed = {}
        for name, consumer in self.members.items():
            offsets = [TopicPartition(self.capture.topic, p, self.commits * 10 + p) for p in held[name]]
            if offsets:
                consumer.commit(offsets=offsets, asynchronous=False)
                committed.update({tp.partition: tp.offset for tp in offsets})
        ids = {n: c.memberid() for n, c in self.members.items()}
        self.capture.steps.append(Step(self.capture.groups[scenario], what, settled_ms, held, ids, committed))

    def close_all(self) -> None:
        for name in list(self.members):
            self.leave(name)


def _join_and_leave(driver: _Driver, scenario: str, settings: dict[str, Any]) -> None:
    """a alone, b joins, b leaves: a handoff each way."""
    driver.join(scenario, "a", settings)
    driver.settle(scenario, "a alone", {"a": PARTITIONS})
    driver.join(scenario, "b", settings)
    driver.settle(scenario, "b joined", {"a": 2, "b": 2})
    driver.leave("b")
    driver.settle(scenario, "b left", {"a": PARTITIONS})
    driver.close_all()


def _static_restart(driver: _Driver, scenario: str, settings: dict[str, Any]) -> None:
    """Two static members; b closes (classic: no LeaveGroup; KIP-848: epoch -2) and comes back
    under its instance id with a new member id."""
    driver.join(scenario, "a", {**settings, "group.instance.id": f"{scenario}-a"})
    driver.join(scenario, "b", {**settings, "group.instance.id": f"{scenario}-b"})
    driver.settle(scenario, "a and b", {"a": 2, "b": 2})
    driver.leave("b")
    driver.join(scenario, "b2", {**settings, "group.instance.id": f"{scenario}-b"})
    driver.settle(scenario, "b restarted", {"a": 2, "b2": 2})
    driver.close_all()


def _aborted_commit(kafka: KafkaCluster, capture: Capture) -> None:
    """Offsets committed inside a transaction that aborts (read_committed must not see them)."""
    consumer = kafka.consumer(capture.groups["transactional"], **CLASSIC)
    consumer.subscribe([capture.topic])
    while not consumer.assignment():
        consumer.poll(0.1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"lens-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition(capture.topic, 0, ABORTED_OFFSET)],
                                         consumer.consumer_group_metadata(), 30)
    producer.abort_transaction(30)
    consumer.close()


SCENARIOS = {  # scenario -> (how its members come and go, their settings)
    "eager": (_join_and_leave, {**CLASSIC, "partition.assignment.strategy": "range"}),
    "cooperative": (_join_and_leave, {**CLASSIC, "partition.assignment.strategy": "cooperative-sticky"}),
    "static": (_static_restart, {**CLASSIC, "partition.assignment.strategy": "range"}),
    "consumer": (_join_and_leave, CONSUMER_PROTOCOL),
    "static_consumer": (_static_restart, CONSUMER_PROTOCOL),
}


def capture_offsets(kafka: KafkaCluster, suffix: str) -> Capture:
    """Drive every scenario on ``kafka``, then read its whole ``__consumer_offsets``."""
    topic = kafka.create_topic(f"broker-log-{suffix}", partitions=PARTITIONS)
    kafka.seed_partitions(topic, PARTITIONS, 50)
    groups = {name: f"broker-log-{name}-{suffix}" for name in (*SCENARIOS, "transactional")}
    capture = Capture(topic, groups, started_ms=int(time.time() * 1000))
    for name, (drive, settings) in SCENARIOS.items():
        driver = _Driver(kafka, capture)
        try:
            drive(driver, name, settings)
        finally:
            driver.close_all()
    _aborted_commit(kafka, capture)
    capture.records = read_offsets_topic({"bootstrap.servers": kafka.bootstrap_servers})
    capture.topic_ids = ids_from_admin(kafka.admin())
    return capture
