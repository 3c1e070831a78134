"""Which Kafka version's schemas are read, and topic ids in Kafka's own form (no JVM)."""
from __future__ import annotations

import base64

import pytest
from confluent_kafka import Uuid

from lens_runtime.errors import LensError
from lens_runtime.jvm_deps import ensure_kafka_jars, kafka_jars_of, pinned_versions
from pipelines.broker_log.records import CoordinatorRecord
from pipelines.broker_log.schema_set import schema_set
from pipelines.broker_log.topic_ids import ids_from_records, kafka_uuid


def test_the_pinned_version_is_the_default_and_an_unfetched_one_names_the_fix():
    assert schema_set() is schema_set(pinned_versions().kafka)
    with pytest.raises(LensError, match=r"ensure_kafka_jars\('9.9.9'\)"):
        kafka_jars_of("9.9.9")
    with pytest.raises(LensError, match="not a Kafka release number"):
        ensure_kafka_jars("latest")


def test_admin_topic_ids_read_in_the_records_form():
    """confluent_kafka prints a Uuid in standard base64; the records (and Kafka) use URL-safe."""
    raw = bytes(range(250, 256)) + bytes(range(10))  # bytes that base64 to '+' and '/' somewhere
    uuid = Uuid(int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True))
    assert kafka_uuid(uuid) == base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    assert str(uuid) != kafka_uuid(uuid)


def test_commits_since_4_1_pair_topic_ids_with_names():
    def commit(topic: str, topic_id: str) -> CoordinatorRecord:
        return CoordinatorRecord(1, "OffsetCommit", {"group": "g", "topic": topic, "partition": 0}, 4,
                                 {"offset": 1, "topicId": topic_id})
    zero = "AAAAAAAAAAAAAAAAAAAAAA"  # a client that committed by name only (librdkafka)
    assert ids_from_records([commit("orders", "kaVbBCAuTvqPFFlgY1B6Pw"), commit("other", zero),
                             CoordinatorRecord(1, "OffsetCommit", {"topic": "x"}, None, None)]) == {
        "kaVbBCAuTvqPFFlgY1B6Pw": "orders"}
