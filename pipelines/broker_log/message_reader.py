"""A schema at one version, compiled into a reader of its bytes.

The same walk Kafka's generated ``read(Readable, version)`` does: the fields the version has, in
order; in flexible versions each struct ends with a tagged-field section (count, then tag, size
and bytes per field), where known tags are read and unknown ones skipped, as Kafka keeps them
aside (``unknownTaggedFields``) and a newer broker's additions stay readable. A field the bytes
do not carry holds its default, as in Kafka's generated classes, so one record type always has
one shape. Compiled once per (schema, version): a record is read by closures, not interpreted.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from pipelines.broker_log.schema import PRIMITIVES, Field, MessageSchema, default_value
from pipelines.broker_log.wire import (FIXED, MalformedBytes, Reader, array_reader, blob_reader, read_uuid,
                                       read_uvarint)


class MessageReader:
    """Reads one message at one version; counts the unknown tags it skipped in ``skipped_tags``
    ((struct name, tag) -> how many), shared by every reader of a schema set."""

    def __init__(self, schema: MessageSchema, version: int, skipped_tags: Counter | None = None) -> None:
        self.schema, self.version = schema, version
        self.flexible = version in schema.flexible
        self.skipped_tags = skipped_tags if skipped_tags is not None else Counter()
        self._read = self._struct(schema.name, schema.fields)

    def read(self, buf: bytes, pos: int = 0) -> tuple[dict[str, Any], int]:
        """The message decoded from ``buf`` at ``pos``, and where it ended."""
        return self._read(buf, pos)

    def _struct(self, name: str, fields: tuple[Field, ...]) -> Reader:
        version, flexible = self.version, self.flexible
        present = [f for f in fields if version in f.versions]
        tagged = {f.tag: (f.name, self._field(f, True)) for f in present if flexible and version in f.tagged}
        regular = {f.name: self._field(f, False) for f in present if not (flexible and version in f.tagged)}
        # in schema order: a regular field's reader, or the default of a field the bytes lack
        plan = [(f.name, regular.get(f.name), None if f.name in regular else _default_of(f, self.schema))
                for f in fields]
        skipped = self.skipped_tags

        def read(buf: bytes, pos: int) -> tuple[dict[str, Any], int]:
            out: dict[str, Any] = {}
            for field_name, reader, default in plan:
                if reader is None:
                    out[field_name] = default()
                else:
                    out[field_name], pos = reader(buf, pos)
            if flexible:
                pos = _tagged_section(buf, pos, tagged, out, name, skipped)
            return out, pos
        return read

    def _field(self, field: Field, tagged: bool) -> Reader:
        nullable = self.version in field.nullable
        element = self._element(field, nullable and not field.is_array, tagged)
        if field.is_array:
            return array_reader(element, self.flexible, nullable, field.name)
        return element

    def _element(self, field: Field, nullable: bool, tagged: bool) -> Reader:
        kind = field.element
        if kind in FIXED:
            return FIXED[kind]
        if kind == "uuid":
            return read_uuid
        if kind in ("string", "bytes", "records"):
            return blob_reader(self.flexible, kind == "string", nullable, field.name)
        if kind in PRIMITIVES:
            raise ValueError(f"{self.schema.name}: no reader for type {kind}")
        struct = self._struct(kind, self.schema.structs[kind])
        return _nullable_struct(struct, tagged) if nullable else struct


def _default_of(field: Field, schema: MessageSchema) -> Callable[[], Any]:
    """A fresh default per record where it is a list or dict (callers may change it), else the constant."""
    value = default_value(field, schema.structs)
    if isinstance(value, (list, dict)):
        return lambda: default_value(field, schema.structs)
    return lambda: value


def _nullable_struct(struct: Reader, tagged: bool) -> Reader:
    """A nullable struct starts with a marker: an int8 (-1 null, 1 present), or in a tagged
    field an unsigned varint (0 null), as Kafka's generated ``read`` has it."""
    marker_of = read_uvarint if tagged else FIXED["int8"]

    def read(buf: bytes, pos: int) -> tuple[dict[str, Any] | None, int]:
        marker, pos = marker_of(buf, pos)
        return (struct(buf, pos) if marker > 0 else (None, pos))
    return read


def _tagged_section(buf: bytes, pos: int, tagged: dict[int, tuple[str, Reader]], out: dict[str, Any],
                    struct_name: str, skipped: Counter) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise MalformedBytes(f"tagged field {tag} of {struct_name} runs past the end of the record")
        if tag in tagged:
            field_name, reader = tagged[tag]
            out[field_name], _ = reader(buf[:end], pos)
        else:
            skipped[(struct_name, tag)] += 1
        pos = end
    return pos
