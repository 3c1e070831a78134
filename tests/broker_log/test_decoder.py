"""The decoder on bytes made by hand: what Kafka's serde is not asked about (it throws where we
count and skip), read from the pinned jar's schemas. Kafka's own serde checks the rest
(test_kafka_serde_oracle.py)."""
from __future__ import annotations

import struct

import pytest

from lens_runtime.jvm_deps import pinned_versions
from pipelines.broker_log.records import SKIP_REASONS, CoordinatorRecord, RecordDecoder, Skipped
from pipelines.broker_log.schema import Versions, camel_case, parse_schema
from pipelines.broker_log.schema_set import schema_set


def _string16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _key(record_type: int, *strings: str) -> bytes:
    return struct.pack(">h", record_type) + b"".join(_string16(s) for s in strings)


@pytest.fixture
def decoder() -> RecordDecoder:
    return RecordDecoder(schema_set())


def test_the_pinned_jar_has_every_record_type_of_the_fact_sheet():
    schemas = schema_set()
    assert schemas.kafka_version == pinned_versions().kafka
    assert set(schemas.records) == {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23}
    assert schemas.records[1].name == "OffsetCommit" and (schemas.records[1].value.valid.low,
                                                           schemas.records[1].value.valid.high) == (0, 4)
    assert 4 in schemas.records[1].value.flexible and 3 not in schemas.records[1].value.flexible
    assert set(schemas.consumer_protocol) == {"ConsumerProtocolSubscription", "ConsumerProtocolAssignment"}


def test_version_ranges_and_names_read_as_kafka_writes_them():
    assert 7 in Versions.parse("0+") and 2 in Versions.parse("1-3") and 4 not in Versions.parse("1-3")
    assert 0 not in Versions.parse("none") and 3 in Versions.parse("3") and 4 not in Versions.parse("3")
    assert camel_case("MemberEpoch") == "memberEpoch" and camel_case("offset") == "offset"
    schema = parse_schema('// a comment\n{"name": "X", "type": "data", "validVersions": "0",\n'
                          '// another\n "fields": [{"name": "A", "type": "int32", "versions": "0+"}]}')
    assert schema.fields[0].name == "a" and 0 not in schema.flexible


def test_an_unknown_record_type_is_counted_and_skipped(decoder):
    outcome = decoder.decode(_key(99, "g"), b"\x00\x00\x01")
    assert isinstance(outcome, Skipped) and outcome.reason == "unknown_type" and outcome.record_type == 99
    assert decoder.stats.skipped[("unknown_type", 99, None)] == 1


def test_a_newer_value_version_is_counted_and_skipped(decoder):
    outcome = decoder.decode(_key(1, "g", "t") + struct.pack(">i", 0), struct.pack(">h", 5) + b"\x00" * 30)
    assert isinstance(outcome, Skipped) and (outcome.reason, outcome.version) == ("unknown_version", 5)
    assert decoder.stats.skipped[("unknown_version", 1, 5)] == 1 and not decoder.stats.decoded


def test_truncated_bytes_are_counted_as_malformed_never_raised(decoder):
    key = _key(1, "g", "t") + struct.pack(">i", 3)
    good = struct.pack(">hq", 3, 42) + struct.pack(">i", -1) + _string16("m") + struct.pack(">q", 1000)
    assert isinstance(decoder.decode(key, good), CoordinatorRecord)
    for cut in (1, 5, len(good) - 1):
        assert decoder.decode(key, good[:cut]).reason == "malformed"
    assert decoder.decode(key[:-2], good).reason == "malformed"
    assert decoder.decode(None, good).reason == "malformed"
    assert {r for r, _, _ in decoder.stats.skipped} <= set(SKIP_REASONS)
    assert sum(decoder.stats.skipped.values()) == 5 and decoder.stats.decoded["OffsetCommit"] == 1


def test_a_tombstone_keeps_its_key(decoder):
    record = decoder.decode(_key(2, "my-group"), None)
    assert (record.name, record.key, record.version, record.value) == (
        "GroupMetadata", {"group": "my-group"}, None, None)


def test_unknown_tagged_fields_are_skipped_and_counted_known_ones_read(decoder):
    """A newer broker's tag (here 7) is stepped over by its size; the tags the schema knows are read."""
    tags = bytes([2, 0, 8]) + struct.pack(">q", 1234) + bytes([7, 3]) + b"new"
    record = decoder.decode(_key(3, "g"), struct.pack(">hi", 0, 17) + tags)
    assert record.value == {"epoch": 17, "metadataHash": 1234}
    assert decoder.stats.skipped_tags == {("ConsumerGroupMetadataValue", 7): 1}


def _group_metadata(protocol_type: str, subscription: bytes, assignment: bytes) -> bytes:
    """A GroupMetadataValue v3 with one member."""
    member = (_string16("m-1") + struct.pack(">h", -1) + _string16("client") + _string16("/10.0.0.1")
              + struct.pack(">ii", 300000, 45000) + struct.pack(">i", len(subscription)) + subscription
              + struct.pack(">i", len(assignment)) + assignment)
    return (struct.pack(">h", 3) + _string16(protocol_type) + struct.pack(">i", 7) + _string16("range")
            + _string16("m-1") + struct.pack(">q", 1700) + struct.pack(">i", 1) + member)


def _subscription(version: int, trailing: bytes = b"") -> bytes:
    body = struct.pack(">hi", version, 1) + _string16("orders") + struct.pack(">i", -1)  # topics, null user data
    if version >= 1:
        body += struct.pack(">i", 1) + _string16("orders") + struct.pack(">ii", 1, 4)  # owned: orders[4]
    if version >= 2:
        body += struct.pack(">i", 6)
    if version >= 3:
        body += _string16("rack-a")
    return body + trailing


def test_consumer_protocol_bytes_are_decoded_a_newer_version_as_the_newest(decoder):
    assignment = struct.pack(">hi", 0, 1) + _string16("orders") + struct.pack(">iii", 2, 0, 4) + struct.pack(">i", -1)
    record = decoder.decode(_key(2, "g"), _group_metadata("consumer", _subscription(5, b"\x00future"), assignment))
    member = record.value["members"][0]
    assert member["subscription_decoded"] == {"version": 5, "topics": ["orders"], "userData": None,
                                              "ownedPartitions": [{"topic": "orders", "partitions": [4]}],
                                              "generationId": 6, "rackId": "rack-a"}
    assert member["assignment_decoded"] == {"version": 0, "assignedPartitions": [{"topic": "orders",
                                                                                  "partitions": [0, 4]}],
                                            "userData": None}
    old = decoder.decode(_key(2, "g"), _group_metadata("consumer", _subscription(0), b""))
    assert old.value["members"][0]["subscription_decoded"]["generationId"] == -1  # v0: the default
    assert old.value["members"][0]["assignment_decoded"] is None  # the leader gave it nothing


def test_consumer_protocol_bytes_of_other_protocol_types_stay_bytes(decoder):
    record = decoder.decode(_key(2, "g"), _group_metadata("connect", b"\x00\x01connect", b"\x00\x01x"))
    member = record.value["members"][0]
    assert member["subscription"] == b"\x00\x01connect" and member["subscription_decoded"] is None


def test_unreadable_member_bytes_keep_the_record_and_are_counted(decoder):
    record = decoder.decode(_key(2, "g"), _group_metadata("consumer", b"\x00\x03\xff", b"\xff\xff"))
    assert isinstance(record, CoordinatorRecord) and record.value["members"][0]["subscription_decoded"] is None
    assert decoder.stats.unreadable_member_bytes == {"ConsumerProtocolSubscription": 1,
                                                     "ConsumerProtocolAssignment": 1}
