"""Kafka's primitive wire types, as readers ``(buf, pos) -> (value, next pos)``.

Fixed-width integers are big-endian; flexible versions (KIP-482) write lengths as unsigned
varints of length + 1 (0 = null), the others as int16 (strings) or int32 (bytes, arrays) with
-1 for null. A uuid becomes Kafka's own string form (``Uuid.toString``: URL-safe base64,
unpadded), the form the Admin API's topic ids print in.
"""
from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

Reader = Callable[[bytes, int], tuple[Any, int]]


class MalformedBytes(ValueError):
    """The bytes do not follow the schema (truncated, a null where none is allowed, bad UTF-8)."""


def _fixed(fmt: str) -> Reader:
    unpack = struct.Struct(fmt).unpack_from
    size = struct.calcsize(fmt)

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        return unpack(buf, pos)[0], pos + size
    return read


FIXED: dict[str, Reader] = {
    "bool": _fixed(">?"), "int8": _fixed(">b"), "int16": _fixed(">h"), "uint16": _fixed(">H"),
    "int32": _fixed(">i"), "uint32": _fixed(">I"), "int64": _fixed(">q"), "float64": _fixed(">d"),
}
read_int16 = FIXED["int16"]
read_int32 = FIXED["int32"]


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MalformedBytes("a varint longer than 5 bytes")


def read_uuid(buf: bytes, pos: int) -> tuple[str, int]:
    raw = buf[pos:pos + 16]
    if len(raw) != 16:
        raise MalformedBytes("a truncated uuid")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii"), pos + 16


def length_reader(flexible: bool, wide: bool) -> Reader:
    """The length (or count) before a string, bytes or array; None for null."""
    if flexible:
        def compact(buf: bytes, pos: int) -> tuple[int | None, int]:
            n, pos = read_uvarint(buf, pos)
            return (n - 1 if n else None), pos
        return compact
    fixed = read_int32 if wide else read_int16

    def classic(buf: bytes, pos: int) -> tuple[int | None, int]:
        n, pos = fixed(buf, pos)
        return (None if n < 0 else n), pos
    return classic


def blob_reader(flexible: bool, text: bool, nullable: bool, name: str) -> Reader:
    """A string (``text``) or bytes field."""
    length = length_reader(flexible, wide=not text)

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        n, pos = length(buf, pos)
        if n is None:
            if not nullable:
                raise MalformedBytes(f"non-nullable field {name} was serialized as null")
            return None, pos
        end = pos + n
        if end > len(buf):
            raise MalformedBytes(f"field {name} runs past the end of the record")
        raw = bytes(buf[pos:end])
        if text:
            try:
                return raw.decode("utf-8"), end
            except UnicodeDecodeError as err:
                raise MalformedBytes(f"field {name} is not UTF-8: {err}") from None
        return raw, end
    return read


def array_reader(element: Reader, flexible: bool, nullable: bool, name: str) -> Reader:
    length = length_reader(flexible, wide=True)

    def read(buf: bytes, pos: int) -> tuple[list[Any] | None, int]:
        n, pos = length(buf, pos)
        if n is None:
            if not nullable:
                raise MalformedBytes(f"non-nullable array {name} was serialized as null")
            return None, pos
        if n > len(buf) - pos:  # every element takes at least one byte
            raise MalformedBytes(f"array {name} claims {n} elements, more than the bytes left")
        out = []
        for _ in range(n):
            item, pos = element(buf, pos)
            out.append(item)
        return out, pos
    return read
