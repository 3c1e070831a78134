"""The consumer protocol's subscription and assignment bytes inside a classic group's members.

Only a group whose protocolType is "consumer" carries them (Connect writes its own, "connect").
Both messages start with an int16 version and are never flexible; a version above the newest
the schemas know is read as the newest, its extra bytes ignored, as Kafka's
``ConsumerProtocol.checkSubscriptionVersion`` does ("new versions cannot remove or reorder any
of the existing fields"). The decoded forms go beside the bytes, as ``subscription_decoded`` and
``assignment_decoded`` (None where the bytes do not parse: counted, the record kept).
"""
from __future__ import annotations

import struct
from collections import Counter
from typing import Any

from pipelines.broker_log.message_reader import MessageReader
from pipelines.broker_log.schema_set import SchemaSet
from pipelines.broker_log.wire import MalformedBytes, read_int16

CONSUMER = "consumer"
DECODED = {"subscription": ("ConsumerProtocolSubscription", "subscription_decoded"),
           "assignment": ("ConsumerProtocolAssignment", "assignment_decoded")}


class ConsumerProtocol:
    def __init__(self, schemas: SchemaSet, skipped_tags: Counter, unreadable: Counter) -> None:
        self.schemas, self.skipped_tags = schemas, skipped_tags
        self.unreadable = unreadable  # message name -> member bytes that did not parse
        self._readers: dict[tuple[str, int], MessageReader] = {}

    def decode_members(self, group_metadata: dict[str, Any]) -> None:
        """Add each member's decoded subscription and assignment (a consumer group only)."""
        consumer = group_metadata.get("protocolType") == CONSUMER
        for member in group_metadata.get("members") or []:
            for source, (message, target) in DECODED.items():
                member[target] = self.decode(message, member.get(source)) if consumer else None

    def decode(self, message: str, data: bytes | None) -> dict[str, Any] | None:
        """``data`` as ``message`` (ConsumerProtocolSubscription or ...Assignment), with its
        ``version`` as written; None for empty bytes (a member the leader gave nothing) or bytes that
        do not parse."""
        if not data:
            return None
        schema = self.schemas.consumer_protocol[message]
        try:
            version, pos = read_int16(data, 0)
            if version < schema.valid.low:
                raise MalformedBytes(f"{message} version {version}")
            read_as = version if schema.valid.high is None else min(version, schema.valid.high)
            reader = self._readers.get((message, read_as))
            if reader is None:
                reader = self._readers[(message, read_as)] = MessageReader(schema, read_as, self.skipped_tags)
            fields, _ = reader.read(data, pos)
        except (MalformedBytes, struct.error, IndexError):
            self.unreadable[message] += 1
            return None
        return {"version": version, **fields}
