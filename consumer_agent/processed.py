"""What the application has processed on a partition, in either processing mode.

``on_next_poll`` (the default) counts every record handed out before the current poll as
processed, so the consumer's position says it all and nothing is tracked per record.
``explicit`` mode is for records finished out of order on worker threads or asyncio tasks
(``mark_processed``): ``InFlight`` tracks them and the safe point is its low mark.
``committed`` mode takes what was committed as what was processed: a framework that commits for
the application (what it processed), whose next poll says nothing about processing.
"""
from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Message

from consumer_agent.contract import OFFSET_UNKNOWN
from consumer_agent.inflight import InFlight, Key


class Processed:
    """The processed frontier of each partition, read from positions, from ``InFlight`` or from commits."""

    def __init__(self, mode: str, committed: Callable[[Key], int] = lambda _key: OFFSET_UNKNOWN) -> None:
        """``mode``: lens.processing's value; ``committed``: the member's last commit of a partition."""
        self.explicit = mode == "explicit"
        self.committed_basis = mode == "committed"
        self._committed = committed
        self.inflight = InFlight()  # stays empty but in explicit mode

    def mark(self, msg: Message) -> None:
        """Explicit mode: ``msg`` is processed. The default mode ignores it: the next poll counts it."""
        if self.explicit:
            self.inflight.mark((msg.topic(), msg.partition()), msg.offset())

    def last_offset(self, key: Key, position: int) -> int:
        """The offset of the last processed record, or ``OFFSET_UNKNOWN``."""
        if self.explicit:
            return self.inflight.last_processed(key)
        if self.committed_basis:
            position = self._committed(key)
        return position - 1 if position > 0 else OFFSET_UNKNOWN

    def frontier(self, key: Key, position: int) -> int | None:
        """Next offset after the processed records: the position (default), the in-flight low mark or the last
        commit."""
        if self.explicit:
            return self.inflight.commit_offset(key)
        if self.committed_basis:
            position = self._committed(key)
        return position if position >= 0 else None

    def wait_drained(self, keys: list[Key], timeout_s: float) -> bool:
        """Block until no record of ``keys`` is in flight, at most ``timeout_s``; True when drained."""
        return self.inflight.wait_drained(keys, timeout_s) if self.explicit else True
