"""Factory methods over a Kafka cluster for tests: topics, seeding, clients with per-test settings."""
from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic


@dataclass(frozen=True)
class SaslListener:
    """A SASL_PLAINTEXT (PLAIN) listener of the cluster and one user allowed on it."""

    bootstrap_servers: str
    user: str
    password: str

    def client_config(self, password: str | None = None) -> dict[str, str]:
        """librdkafka settings that authenticate as the user (with ``password`` instead, to fail)."""
        return {"bootstrap.servers": self.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN", "sasl.username": self.user,
                "sasl.password": self.password if password is None else password}


@dataclass
class KafkaCluster:
    bootstrap_servers: str
    broker: Any = None  # the EmbeddedKafka when the tests started one
    sasl: SaslListener | None = None  # the embedded broker's SASL listener (None on LENS_TEST_BOOTSTRAP)

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap_servers})

    def create_topic(self, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> str:
        admin = self.admin()  # keep a reference: the futures fail if the handle is collected
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                                config=config or {})], operation_timeout=30)
        futures[name].result(timeout=30)
        # The controller has it; the broker's metadata may lag a moment behind (a CI run once
        # saw describe_topics answer "unknown topic" right after): return once it is visible.
        deadline = time.monotonic() + 30
        while True:
            try:
                admin.describe_topics(TopicCollection([name]))[name].result(timeout=10)
                return name
            except KafkaException as err:
                if err.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def producer(self, **overrides: Any) -> Producer:
        return Producer({"bootstrap.servers": self.bootstrap_servers, "linger.ms": 5, **overrides})

    def consumer_config(self, group_id: str, **overrides: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap_servers, "group.id": group_id,
                "auto.offset.reset": "earliest", **overrides}

    def consumer(self, group_id: str, **overrides: Any) -> Consumer:
        return Consumer(self.consumer_config(group_id, **overrides))

    def seed(self, topic: str, values: Iterable[bytes | str], key: Any = None,
             partition: int | None = None) -> int:
        producer = self.producer()
        count = 0
        for value in values:
            kwargs = {"partition": partition} if partition is not None else {}
            producer.produce(topic, value=value, key=key, **kwargs)
            count += 1
            if count % 10_000 == 0:
                producer.flush()
        producer.flush(30)
        return count

    def seed_partitions(self, topic: str, partitions: int, count: int, start: int = 0) -> set[str]:
        """``count`` records per partition, valued ``"<partition>-<i>"`` for i from ``start``: ids to count
        duplicates by."""
        ids = set()
        for p in range(partitions):
            values = [f"{p}-{i}" for i in range(start, start + count)]
            self.seed(topic, values, partition=p)
            ids.update(values)
        return ids

    def deliver(self, topic: str, records: Iterable[tuple[str | bytes | None, str | bytes | None, int]]
                ) -> list[tuple[int, int] | str]:
        """Produce (key, value, timestamp ms) records one by one; per record its (partition, offset)
        in the topic, or the error that kept it out (a record the broker refuses)."""
        producer = self.producer()
        places: list[tuple[int, int] | str] = []

        def on_delivery(index: int):
            def done(err, msg) -> None:
                places[index] = str(err) if err is not None else (msg.partition(), msg.offset())
            return done

        ahead = (time.time() + 3600) * 1000
        for key, value, timestamp in records:
            places.append("not delivered")
            # a record the broker refuses fails the whole batch it is in (the others come back
            # _INVALID_DIFFERENT_RECORD): one stamped an hour ahead goes in a batch of its own
            if timestamp > ahead:
                producer.flush(60)
            producer.produce(topic, key=key, value=value, timestamp=timestamp, on_delivery=on_delivery(len(places) - 1))
            producer.poll(0)
            if timestamp > ahead:
                producer.flush(60)
        producer.flush(60)
        return places

    def feed(self, topic: str, records: Iterable[tuple[str | None, str | bytes | None, int]]) -> int:
        """Produce (key, value, timestamp ms) records as the agent does (key = agent_id, sent at event time)."""
        producer = self.producer()
        count = 0
        for key, value, timestamp in records:
            producer.produce(topic, key=key, value=value, timestamp=timestamp)
            count += 1
        producer.flush(30)
        return count
