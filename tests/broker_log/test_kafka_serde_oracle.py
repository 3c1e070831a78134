"""The decoder against Kafka's own serde (GroupCoordinatorRecordSerde + CoordinatorRecordJsonConverters,
run in a JVM from the pinned jars): the same bytes read both ways, compared field by field.

Two sets of bytes: records of every type at every valid version written by Kafka's serializer
from values that are not the defaults (so every tagged field is on the wire), and the records
the embedded broker wrote for real groups (classic eager and cooperative, static members, the
consumer protocol plain and static, commits; tests/support/offsets_capture.py).
"""
from __future__ import annotations

from pipelines.broker_log.records import CoordinatorRecord, RecordDecoder
from pipelines.broker_log.schema_set import SchemaSet, schema_set
from tests.support.kafka_serde import KafkaSerde, record_differences
from tests.support.offsets_capture import ABORTED_OFFSET
from tests.support.record_samples import every_record


def _compare(schemas: SchemaSet, records: list[tuple[bytes, bytes | None]], kafka: list[dict]) -> list[str]:
    """Every difference between our reading and Kafka's, named by record."""
    decoder = RecordDecoder(schemas)
    found = []
    for (key, value), theirs in zip(records, kafka):
        assert "error" not in theirs, theirs
        ours = decoder.decode(key, value)
        assert isinstance(ours, CoordinatorRecord), ours
        assert (ours.record_type, ours.version) == (theirs["type"], theirs["version"])
        found += record_differences(schemas, ours, theirs)
    assert not decoder.stats.skipped and not decoder.stats.skipped_tags
    return found


def test_every_record_type_and_version_reads_as_kafka_reads_it(kafka_serde: KafkaSerde):
    schemas = schema_set()
    specs = every_record(schemas)
    encoded = kafka_serde.encode(specs)
    assert [e for e in encoded if isinstance(e, str)] == []
    assert _compare(schemas, encoded, kafka_serde.decode(encoded)) == []
    versions = {(s["type"], s["version"]) for s in specs}
    assert {(1, v) for v in range(5)} | {(2, v) for v in range(5)} <= versions  # 4.1's v4 among them


def test_the_brokers_own_records_read_as_kafka_reads_them(offsets_capture, kafka_serde: KafkaSerde):
    records = [(r.key, r.value) for r in offsets_capture.records]
    kafka = kafka_serde.decode(records)
    assert _compare(schema_set(), records, kafka) == []
    ours = [RecordDecoder(schema_set()).decode(k, v) for k, v in records]
    names = {r.name for r in ours}
    assert {"OffsetCommit", "GroupMetadata", "ConsumerGroupMetadata", "ConsumerGroupMemberMetadata",
            "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupTargetAssignmentMember",
            "ConsumerGroupCurrentMemberAssignment"} <= names
    assert any(r.value is None for r in ours), "the leaves and fences wrote tombstones"
    decoded_members = [m for r in ours if r.name == "GroupMetadata" and r.value for m in r.value["members"]]
    assert decoded_members and all(m["subscription_decoded"] for m in decoded_members)


def test_read_committed_hides_an_aborted_transactions_offsets(offsets_capture):
    decoder = RecordDecoder(schema_set())
    group = offsets_capture.groups["transactional"]
    commits = [r for r in (decoder.decode(x.key, x.value) for x in offsets_capture.records)
               if r.name == "OffsetCommit" and r.key["group"] == group]
    assert [c.value["offset"] for c in commits if c.value] == []
    assert ABORTED_OFFSET not in [c.value["offset"] for c in commits if c.value]
