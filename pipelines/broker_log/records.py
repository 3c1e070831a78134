"""``__consumer_offsets`` records decoded: key = int16 record type + the type's key at version 0,
value = int16 version + the type's value at that version, a null value = a tombstone.

As Kafka's ``CoordinatorRecordSerde``; and as its ``CoordinatorRecordMessageFormatter``, a record
this schema set cannot read (a type it does not know, a value version newer than it knows,
bytes that do not parse) is skipped and counted by reason, never an error: a cluster may run a
newer broker than the pinned schemas. A classic group's member subscription and assignment
bytes are decoded too when the group's protocolType is "consumer" (``consumer_protocol``).
"""
from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipelines.broker_log.consumer_protocol import ConsumerProtocol
from pipelines.broker_log.message_reader import MessageReader
from pipelines.broker_log.schema_set import SchemaSet
from pipelines.broker_log.wire import MalformedBytes, read_int16

# Why a record was skipped (DecodeStats.skipped's first element).
SKIP_REASONS: tuple[str, ...] = ("unknown_type", "unknown_version", "malformed")
KEY_CACHE_SIZE = 100_000


@dataclass(frozen=True)
class CoordinatorRecord:
    record_type: int
    name: str  # "OffsetCommit", "GroupMetadata", "ConsumerGroupCurrentMemberAssignment", ...
    key: dict[str, Any]
    version: int | None  # the value's version; None for a tombstone
    value: dict[str, Any] | None  # None: a tombstone


@dataclass(frozen=True)
class Skipped:
    reason: str  # one of SKIP_REASONS
    record_type: int | None
    version: int | None
    detail: str


@dataclass
class DecodeStats:
    """What a decoder read and skipped; ``skipped_tags`` counts the unknown tagged fields it
    stepped over ((struct, tag) -> count): a newer broker's additions the schemas do not name."""

    decoded: Counter = field(default_factory=Counter)  # record name -> count
    skipped: Counter = field(default_factory=Counter)  # (reason, record type, version) -> count
    skipped_tags: Counter = field(default_factory=Counter)
    unreadable_member_bytes: Counter = field(default_factory=Counter)  # consumer protocol message -> count


class RecordDecoder:
    """Decodes ``__consumer_offsets`` keys and values with one Kafka version's schemas."""

    def __init__(self, schemas: SchemaSet) -> None:
        self.schemas = schemas
        self.stats = DecodeStats()
        self._readers: dict[tuple[int, str, int], MessageReader] = {}
        self._keys: dict[bytes, dict[str, Any]] = {}  # a busy group rewrites the same few keys: read each once
        self.consumer_protocol = ConsumerProtocol(schemas, self.stats.skipped_tags,
                                                  self.stats.unreadable_member_bytes)

    def decode(self, key: bytes | None, value: bytes | None) -> CoordinatorRecord | Skipped:
        """One record; a Skipped says why it could not be read, and is counted in ``stats``."""
        outcome = self._decode(key, value)
        if isinstance(outcome, Skipped):
            self.stats.skipped[(outcome.reason, outcome.record_type, outcome.version)] += 1
        else:
            self.stats.decoded[outcome.name] += 1
        return outcome

    def _decode(self, key: bytes | None, value: bytes | None) -> CoordinatorRecord | Skipped:
        record_type = version = None
        try:
            if key is None or len(key) < 2:
                return Skipped("malformed", None, None, "a record without a key type")
            record_type, pos = read_int16(key, 0)
            types = self.schemas.records.get(record_type)
            if types is None:
                return Skipped("unknown_type", record_type, None, f"record type {record_type} is not in "
                               f"Kafka {self.schemas.kafka_version}'s schemas")
            key_fields = self._key(record_type, key, pos)
            if value is None:
                return CoordinatorRecord(record_type, types.name, key_fields, None, None)
            version, pos = read_int16(value, 0)
            if version not in types.value.valid:
                return Skipped("unknown_version", record_type, version,
                               f"{types.value.name} v{version} is outside Kafka {self.schemas.kafka_version}'s "
                               f"valid versions")
            value_fields, _ = self._reader(record_type, "value", version).read(value, pos)
        except (MalformedBytes, struct.error, IndexError) as err:
            return Skipped("malformed", record_type, version, str(err) or type(err).__name__)
        if types.name == "GroupMetadata":
            self.consumer_protocol.decode_members(value_fields)
        return CoordinatorRecord(record_type, types.name, key_fields, version, value_fields)

    def _key(self, record_type: int, key: bytes, pos: int) -> dict[str, Any]:
        known = self._keys.get(key)
        if known is None:
            if len(self._keys) >= KEY_CACHE_SIZE:
                self._keys.clear()
            known = self._keys[key] = self._reader(record_type, "key", 0).read(key, pos)[0]
        return dict(known)

    def _reader(self, record_type: int, side: str, version: int) -> MessageReader:
        reader = self._readers.get((record_type, side, version))
        if reader is None:
            types = self.schemas.records[record_type]
            schema = types.key if side == "key" else types.value
            reader = self._readers[(record_type, side, version)] = MessageReader(schema, version,
                                                                                 self.stats.skipped_tags)
        return reader


def record_row(record: CoordinatorRecord, offsets_partition: int, offset: int, timestamp_ms: int) -> dict[str, Any]:
    """A decoded record as the plain row the history functions read (``classic_history`` and
    ``consumer_history``, one group's rows in offset order)."""
    return {"group_id": record.key.get("group", record.key.get("groupId")), "record_type": record.record_type,
            "name": record.name, "key": record.key, "version": record.version, "value": record.value,
            "offsets_partition": offsets_partition, "offset": offset, "timestamp_ms": timestamp_ms}
