"""A broker newer than the one we pin writes records our decoder reads: with the pinned schemas
(its new tagged fields skipped and counted) and with its own (the new fields used where present).

Slow (fetches the newer Kafka's jars from Maven Central once, starts its broker, drives the
groups): ``./lens test -m slow tests/broker_log/test_newer_broker.py`` (about a minute after the
first fetch).
"""
from __future__ import annotations

import pytest

from lens_runtime.jvm_deps import ensure_kafka_jars
from lens_runtime.kafka_broker import EmbeddedKafka
from pipelines.broker_log.consumer_history import consumer_events
from pipelines.broker_log.records import CoordinatorRecord, RecordDecoder, record_row
from pipelines.broker_log.schema_set import schema_set
from tests.support.kafka_cluster import KafkaCluster
from tests.support.kafka_serde import KafkaSerde, record_differences
from tests.support.offsets_capture import capture_offsets

NEWER = "4.4.0"  # the newest 4.x on Maven Central when written (4.3 added KIP-1263's and KIP-1251's fields)


def _new_fields(record_type: int) -> set[str]:
    """Fields of the newer value schema (any struct) the pinned one lacks."""
    def names(schema):
        return {f.name for fields in (schema.fields, *schema.structs.values()) for f in fields}
    return names(schema_set(NEWER).records[record_type].value) - names(schema_set().records[record_type].value)


@pytest.mark.slow
def test_a_newer_brokers_records_decode_with_the_pinned_and_with_its_own_schemas(tmp_path):
    jars = ensure_kafka_jars(NEWER)
    with EmbeddedKafka(kafka_version=NEWER) as broker:
        capture = capture_offsets(KafkaCluster(broker.bootstrap_servers, broker=broker), "newer")
    records = [(r.key, r.value) for r in capture.records]
    kafka = KafkaSerde.compile(jars, tmp_path / "serde").decode(records)
    pinned, own = RecordDecoder(schema_set()), RecordDecoder(schema_set(NEWER))
    new_seen: set[str] = set()
    for (key, value), theirs in zip(records, kafka):
        for decoder in (own, pinned):
            ours = decoder.decode(key, value)
            assert isinstance(ours, CoordinatorRecord), ours
            if ours.value is None:
                continue
            found = record_differences(decoder.schemas, ours, theirs)
            if decoder is own:
                assert found == [], found
            else:  # only the fields the newer schema adds may differ: Kafka's reading has them, ours not
                assert all(d.endswith("only in Kafka's reading") for d in found), found
                extra = {d.split(":")[0].split(".")[-1] for d in found}
                assert extra <= _new_fields(ours.record_type), found
                new_seen |= extra
    assert not own.stats.skipped and not own.stats.skipped_tags and not pinned.stats.skipped
    # what 4.3+ adds reached the wire and the pinned schemas stepped over it
    assert pinned.stats.skipped_tags and {name for name, _ in pinned.stats.skipped_tags} <= {
        "ConsumerGroupTargetAssignmentMetadataValue", "TopicPartitions"}
    rows = [record_row(own.decode(r.key, r.value), r.partition, r.offset, r.timestamp_ms)
            for r in sorted(capture.records, key=lambda r: (r.partition, r.offset))
            if r.key and own.decode(r.key, r.value).key.get("groupId") == capture.groups["consumer"]]
    events = consumer_events(rows, capture.topic_ids)
    targets = [e for e in events if e["kind"] == "target_assignment"]
    timed = [e for e in targets if e["assignment_timestamp_ms"]]
    assert timed and all(e["assignment_timestamp_ms"] <= e["at_ms"] for e in timed), "KIP-1263's timestamp, used"
    epochs = [p for e in events for p in e["assigned"] or [] if p["assignment_epochs"]]
    assert epochs, "KIP-1251's per-partition assignment epochs, used"
    assert all(len(p["assignment_epochs"]) == len(p["partitions"]) for p in epochs)
    assert new_seen, "the pinned schemas left out the newer fields"
