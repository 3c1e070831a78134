"""Records handed out but not yet processed, for ``lens.processing=explicit``.

Applications that process on worker threads or asyncio tasks finish records out of
order, so the safe commit point of a partition is its lowest unfinished offset (or one
past the highest finished when nothing is pending). Only explicit mode pays for this
bookkeeping; the default mode reads positions instead.
"""
from __future__ import annotations

import threading
import time

from consumer_agent.contract import OFFSET_UNKNOWN

Key = tuple[str, int]


class InFlight:
    """Per-partition pending offsets, thread-safe, with a wait for a set of partitions to drain."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._pending: dict[Key, set[int]] = {}
        self._done: dict[Key, int] = {}

    def handed_out(self, key: Key, offset: int) -> None:
        with self._changed:
            self._pending.setdefault(key, set()).add(offset)

    def mark(self, key: Key, offset: int) -> None:
        """Record ``offset`` of ``key`` as processed; offsets not handed out (or already forgotten) are ignored."""
        with self._changed:
            pending = self._pending.get(key)
            if pending is None or offset not in pending:
                return
            pending.discard(offset)
            if offset > self._done.get(key, -1):
                self._done[key] = offset
            self._changed.notify_all()

    def commit_offset(self, key: Key) -> int | None:
        """The next offset to read that loses no unfinished record; None when nothing was processed."""
        with self._changed:
            pending = self._pending.get(key)
            if pending:
                return min(pending)
            done = self._done.get(key)
            return None if done is None else done + 1

    def last_processed(self, key: Key) -> int:
        offset = self.commit_offset(key)
        return OFFSET_UNKNOWN if offset is None or offset <= 0 else offset - 1

    def wait_drained(self, keys: list[Key], timeout_s: float) -> bool:
        """Block until no offset of ``keys`` is pending, at most ``timeout_s``; True when drained."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while any(self._pending.get(k) for k in keys):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True

    def forget(self, keys: list[Key]) -> None:
        """Drop the state of partitions this member no longer owns."""
        with self._changed:
            for key in keys:
                self._pending.pop(key, None)
                self._done.pop(key, None)
