"""The generation (classic) or member epoch (KIP-848) from ``consumer_group_metadata()``.

Python exposes neither, but librdkafka serialises them into the opaque group metadata
meant for transactions (``rd_kafka_consumer_group_metadata_write``): ``b"CGMDv2:"``, an
int32 generation in host byte order, then NUL-terminated group id and member id. The
layout is internal, so parsing is defensive: anything unexpected gives -1 (unknown).
"""
from __future__ import annotations

import sys

_MAGIC = b"CGMDv2:"
_INT32 = 4


def generation_from_metadata(blob: object) -> int:
    """The generation id or member epoch in ``blob``; -1 when it cannot be read."""
    if not isinstance(blob, bytes) or not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + _INT32:
        return -1
    raw = blob[len(_MAGIC):len(_MAGIC) + _INT32]
    return int.from_bytes(raw, sys.byteorder, signed=True)
