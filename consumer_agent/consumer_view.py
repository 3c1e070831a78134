"""What the agent's helpers may ask of the consumer they watch: a narrow view, not the consumer.

The membership's partition events, progress ticks, commit-on-revoke and the rebalance enforcer need
positions, committed offsets, watermarks, a synchronous commit and the group metadata: public
methods of ``confluent_kafka.Consumer``, which ``InstrumentedConsumer`` implements as the client
does (its ``commit`` records the commit). What only the agent does to its consumer (switch the
slow path of its polls, subscribe with the agent's rebalance callbacks) the consumer hands over
itself, as ``ConsumerControls``, when it attaches its agent: nothing outside the consumer's module
touches its private attributes, and nothing here imports the consumer.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import TopicPartition


class ConsumerView(Protocol):
    """The consumer as the agent's helpers see it (held through a weak proxy: see ``consumer_agent.agent``)."""

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The partitions with the offset the application reads next (negative: unknown)."""

    def committed(self, partitions: list[TopicPartition], timeout: float = ...) -> list[TopicPartition]:
        """The group's committed offsets (a broker round trip)."""

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float = ...,
                              cached: bool = ...) -> tuple[int, int]:
        """(low, high) watermarks; ``cached``: as the last fetch left them, no request."""

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> list[TopicPartition] | None:
        """Commit ``offsets`` (recorded as the application's commits are)."""

    def consumer_group_metadata(self) -> Any:
        """The opaque group metadata (``group_metadata`` reads the generation from it)."""

    def memberid(self) -> str | None:
        """The member id the group gave, if any."""


@dataclass(frozen=True)
class ConsumerControls:
    """What only the agent does to its consumer, handed over by the consumer when it attaches its agent.
    Neither keeps the consumer alive; after it is freed they raise ``ReferenceError``."""

    # poll()/consume() hand what they return to the agent (the slow path), or not (one attribute check).
    watch_polls: Callable[[bool], None]
    # Consumer.subscribe(topics) with the agent's rebalance callbacks (which call the application's).
    resubscribe: Callable[[list[str]], None]
