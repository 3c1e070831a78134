"""The raw records of ``__consumer_offsets``, read with a plain consumer: the edge that talks to Kafka.

``assign`` (no group, so no Group ACL and no offsets of our own), ``read_committed`` (a
transactional offset commit counts only once its transaction commits; librdkafka's default, said
anyway), and every partition read from a start offset to the log end seen when the read began.
Reading needs READ on ``Topic:__consumer_offsets`` (and DESCRIBE on the reader's groups, see
``READER_GROUP``); without it the broker answers TOPIC_AUTHORIZATION_FAILED (GROUP_...), which
``read_offsets_topic`` turns into one line naming the ACLs (``refused``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from lens_runtime.errors import LensError

OFFSETS_TOPIC = "__consumer_offsets"
# The group id the reader's consumers carry, or start with (they join no group: assign(), no commits);
# a client with a group id looks its coordinator up and asks its committed offsets before its first
# fetch (Spark's offset reader does), which needs DESCRIBE on the group. The broker stage's consumers
# carry one of their own per read, ``READER_GROUP``-<uuid> (Spark's ``groupIdPrefix``): Spark keeps a
# consumer per group id and partition in each executor and refuses other settings under the same key,
# and every cluster's topic has the same partitions. One prefixed ACL covers them all.
READER_GROUP = "rebalance-lens-broker-source"


@dataclass(frozen=True)
class RawRecord:
    partition: int
    offset: int
    timestamp_ms: int  # the coordinator's clock when it wrote the record (CreateTime)
    key: bytes | None
    value: bytes | None  # None: a tombstone


def read_offsets_topic(client_config: dict[str, Any], start: dict[int, int] | None = None,
                       timeout_s: float = 60.0) -> list[RawRecord]:
    """Every record from ``start`` (partition -> offset; default: the earliest) to the log end
    of each partition as it was when the read began, in offset order per partition."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    config = {**client_config, "group.id": client_config.get("group.id", READER_GROUP),
              "enable.auto.commit": False, "isolation.level": "read_committed", "enable.partition.eof": True}
    consumer = Consumer(config)
    try:
        ends = _log_ends(consumer, timeout_s)
        start = start or {}
        todo = {p for p, end in ends.items() if end > start.get(p, 0)}
        consumer.assign([TopicPartition(OFFSETS_TOPIC, p, start.get(p, OFFSET_BEGINNING)) for p in sorted(todo)])
        records: list[RawRecord] = []
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.5):
                err = msg.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    raise LensError(_read_failure(err))
                if err is None:
                    _, ts = msg.timestamp()
                    records.append(RawRecord(msg.partition(), msg.offset(), ts, msg.key(), msg.value()))
                position = msg.offset() + 1 if err is None else msg.offset()
                if msg.partition() in todo and position >= ends[msg.partition()]:
                    todo.discard(msg.partition())
        if todo:
            raise LensError(f"reading {OFFSETS_TOPIC} did not reach the log end of partitions {sorted(todo)} "
                            f"within {timeout_s:.0f} s")
        return records
    finally:
        consumer.close()


def _log_ends(consumer: Any, timeout_s: float) -> dict[int, int]:
    from confluent_kafka import KafkaException, TopicPartition

    try:
        topic = consumer.list_topics(OFFSETS_TOPIC, timeout=timeout_s).topics[OFFSETS_TOPIC]
        if topic.error is not None:
            raise LensError(_read_failure(topic.error))
        return {p: consumer.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=timeout_s)[1]
                for p in sorted(topic.partitions)}
    except KafkaException as err:
        raise LensError(_read_failure(err.args[0])) from None


def refused(error_name: str) -> str:
    """The one line a refused read of the topic gives (``error_name``: Kafka's, e.g.
    TOPIC_AUTHORIZATION_FAILED): the ACLs it needs and the fallback where they cannot be granted."""
    return (f"reading {OFFSETS_TOPIC} was refused ({error_name}): the broker source needs READ on "
            f"Topic:{OFFSETS_TOPIC} and DESCRIBE on the groups prefixed {READER_GROUP} (kafka-acls --add "
            f"--allow-principal User:<you> --operation Read --topic {OFFSETS_TOPIC} --operation Describe --group "
            f"{READER_GROUP} --resource-pattern-type prefixed); "
            "where that cannot be granted, the fallback is the Admin API (describe groups, list offsets) at "
            "polling resolution, which rebalance-lens does not poll yet: run the agent on the groups instead")


def _read_failure(err: Any) -> str:
    if "AUTHORIZATION" in err.name():
        return refused(err.name())
    return f"reading {OFFSETS_TOPIC} failed: {err.name()}: {err.str()}"
