"""The orders the broker's Java code iterates in: HashMap/HashSet of member ids, topic ids and
partition numbers, and Java's string and Uuid comparisons.

KIP-848 assignors take members in ``HashMap<String, ...>`` order and topics in
``HashSet<Uuid>`` order, so who gets the extra partitions depends on hash codes. A Java
HashMap iterates its buckets in index order, ``(h ^ (h >>> 16)) & (capacity - 1)``, and a
bucket in insertion order; for keys sharing a bucket we take the caller's order.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import TypeVar

K = TypeVar("K")
_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1


def string_hash(text: str) -> int:
    """``String.hashCode``: 31-polynomial over UTF-16 code units, as an unsigned 32-bit value."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & _MASK32
    return h


def uuid_hash(topic_id: uuid.UUID) -> int:
    """``org.apache.kafka.common.Uuid.hashCode``: the xor of both halves of msb ^ lsb."""
    folded = (topic_id.int >> 64) ^ (topic_id.int & _MASK64)
    return ((folded >> 32) ^ folded) & _MASK32


def integer_hash(value: int) -> int:
    return value & _MASK32


def grown_capacity(size: int) -> int:
    """Table size of a ``new HashMap<>()`` after ``size`` puts: 16, doubled past 3/4 full."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def copied_capacity(size: int) -> int:
    """Table size of ``new HashSet<>(collection)`` on JDK 17: ``max(size / .75 + 1, 16)`` rounded up to 2^k."""
    wanted = max(int(size / 0.75) + 1, 16)
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    return capacity


def hash_order(keys: Iterable[K], hash_of: Callable[[K], int], capacity: int) -> list[K]:
    """``keys`` in the iteration order of a Java HashMap/HashSet of that capacity."""
    def bucket(key: K) -> int:
        h = hash_of(key)
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(keys, key=bucket)  # stable: keys sharing a bucket keep the caller's order


def member_id_order(member_ids: Iterable[str]) -> list[str]:
    """``GroupSpec.memberIds()``: the keys of the ``HashMap`` the target-assignment builder fills."""
    ids = list(member_ids)
    return hash_order(ids, string_hash, grown_capacity(len(ids)))


def partition_set_order(partitions: Iterable[int]) -> list[int]:
    """A member's partitions of one topic in its previous target (``Assignment.fromRecord`` copies
    the record's list into a ``HashSet<Integer>``): by ``p mod capacity``, then ascending."""
    ordered = sorted(partitions)
    return hash_order(ordered, integer_hash, copied_capacity(len(ordered)))


def string_key(text: str) -> bytes:
    """Sort key for ``String.compareTo`` (UTF-16 code units), which differs from Python's beyond the BMP."""
    return text.encode("utf-16-be")


def uuid_key(topic_id: uuid.UUID) -> tuple[int, int]:
    """Sort key for ``Uuid.compareTo``: signed most, then signed least significant bits."""
    def signed(bits: int) -> int:
        return bits - (1 << 64) if bits >> 63 else bits
    return signed(topic_id.int >> 64), signed(topic_id.int & _MASK64)
