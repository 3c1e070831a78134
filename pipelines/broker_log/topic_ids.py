"""Topic ids to names: consumer-protocol records name partitions by TopicId, not by name.

Two sources, the log first: an offset commit since Kafka 4.1 carries its topic's id beside the
name in its key (``OffsetCommitValue.topicId``), and the legacy partition-metadata record pairs
them too; then the Admin API (DescribeTopics) for the topics that exist now. An id that neither
knows (a topic deleted before its commits were read) stays an id: never guessed. The broker
stage asks the Admin API through Spark's JVM (``pipelines.broker.cluster_admin.ClusterAdmin.topic_ids``,
the client its settings are for), keeps every pair it learned (``silver/broker_topics``) and adds
those the records pair as it reads them (``ids_in``).
"""
from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from pipelines.broker_log.records import CoordinatorRecord
from pipelines.broker_log.schema import ZERO_UUID


def ids_from_records(records: Iterable[CoordinatorRecord]) -> dict[str, str]:
    """topic id -> name, from the decoded records that pair them."""
    names: dict[str, str] = {}
    for record in records:
        names.update(ids_in(record.name, record.key, record.value))
    return names


def ids_in(name: str, key: dict[str, Any], value: dict[str, Any] | None) -> dict[str, str]:
    """topic id -> name, of one decoded record (its name, key and value; a ``records.record_row``'s too)."""
    if value is None:
        return {}
    if name == "OffsetCommit" and value.get("topicId", ZERO_UUID) != ZERO_UUID:
        return {value["topicId"]: key["topic"]}
    if name == "ConsumerGroupPartitionMetadata":
        return {t["topicId"]: t["topicName"] for t in value["topics"]}
    return {}


def ids_from_admin(admin: Any, timeout_s: float = 30.0) -> dict[str, str]:
    """topic id -> name of every topic the cluster has now (confluent_kafka AdminClient; needs
    DESCRIBE on the topics)."""
    from confluent_kafka import TopicCollection

    names = sorted(admin.list_topics(timeout=timeout_s).topics)
    if not names:
        return {}
    described = admin.describe_topics(TopicCollection(names), request_timeout=timeout_s)
    return {kafka_uuid(future.result(timeout=timeout_s).topic_id): name for name, future in described.items()}


def kafka_uuid(uuid: Any) -> str:
    """A confluent_kafka Uuid in Kafka's string form (``Uuid.toString``: URL-safe base64, as the
    records' ids decode): its ``str()`` is standard base64, '+' and '/' where Kafka has '-' and '_'."""
    mask = (1 << 64) - 1
    raw = (uuid.get_most_significant_bits() & mask).to_bytes(8, "big") + \
        (uuid.get_least_significant_bits() & mask).to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

