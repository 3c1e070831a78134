"""The slow path of poll()/consume(): first fetches, poll errors, progress ticks, agent health.

poll() and consume() hand the returned messages to ``Progress.hooked`` only while the
consumer's ``_hook`` flag is True; testing it is all the hot path adds. ``Progress`` owns
that flag and keeps it True only while something needs the messages: in explicit mode
(records go in flight), while a newly assigned partition awaits its first record, and
for one poll after each progress interval (``arm_tick``, on the emitter thread).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from confluent_kafka import Message, TopicPartition

from consumer_agent import contract
from consumer_agent.membership import Emit, Membership
from consumer_agent.processed import Processed

if TYPE_CHECKING:
    from consumer_agent.instrumented import InstrumentedConsumer

MAX_PROGRESS_PARTITIONS = 100
# A partition that hands out no record this long after its assignment stops being watched for its
# first fetch, so idle partitions cannot keep the slow path on. It loses nothing: a backlog (the
# records a previous owner left uncommitted, i.e. the duplicates) is fetched at once after assignment.
FIRST_FETCH_WATCH_S = 30.0
_monotonic = time.monotonic


class Progress:
    """Sets the consumer's ``_hook`` flag and handles what the hooked polls return.

    Args:
        consumer: the instrumented consumer (its ``_hook`` flag, positions and watermarks).
        guard: runs telemetry code without raising into the host; ``note`` counts a failure.
        emit_health: emits agent_health while drops or emitter errors are unreported.
    """

    def __init__(self, consumer: InstrumentedConsumer, member: Membership, processed: Processed, *, emit: Emit,
                 guard: Callable[..., Any], note: Callable[[str], None], emit_health: Callable[[], None]) -> None:
        self._consumer = consumer
        self._member = member
        self._processed = processed
        self._explicit = processed.explicit
        self._emit = emit
        self._guard = guard
        self._note = note
        self._emit_health = emit_health
        self._tick_due = False
        self._last_tick = _monotonic()
        self.rearm()

    def arm_tick(self) -> None:
        """Emitter thread, every progress interval: make the next poll take the slow path once."""
        self._tick_due = True
        self._consumer._hook = True

    def rearm(self) -> None:
        """Recompute the consumer's ``_hook`` flag: after a tick, a first fetch, or a change of assignment."""
        self._consumer._hook = self._explicit or bool(self._member.awaiting_first) or self._tick_due

    def hooked(self, msgs: Sequence[Message]) -> None:
        """The messages a poll()/consume() returned while the flag was set."""
        for msg in msgs:
            self._observe(msg)
        if self._tick_due:
            self._tick_due = False
            self._guard(self._tick)
            self.rearm()

    def _observe(self, msg: Message) -> None:
        """Look at one returned message: errors, first fetch after assignment, explicit in-flight."""
        try:
            err = msg.error()
            if err is not None:
                self._member.record_poll_error(err)
                return
            key = (msg.topic(), msg.partition())
            if self._explicit:
                self._processed.inflight.handed_out(key, msg.offset())
            awaiting_first = self._member.awaiting_first
            if awaiting_first:
                assigned_at = awaiting_first.pop(key, None)
                if assigned_at is not None:
                    self._member.frontier[key] = msg.offset()
                    self._emit("first_fetch", contract.FirstFetch(
                        topic=key[0], partition=key[1], offset=msg.offset(),
                        since_assign_ms=(_monotonic() - assigned_at) * 1000))
                    self.rearm()
        except Exception as exc:
            self._note(f"agent: observe: {exc!r}")

    def _tick(self) -> None:
        """Periodic progress per owned partition, plus agent_health while drops or errors are unreported."""
        now = _monotonic()
        interval_ms = (now - self._last_tick) * 1000
        self._last_tick = now
        member = self._member
        for key, assigned_at in list(member.awaiting_first.items()):
            if now - assigned_at > FIRST_FETCH_WATCH_S:
                del member.awaiting_first[key]
        # After a stall past max.poll.interval.ms (or a fencing) the first poll returns the error
        # before the lost callback runs: the partitions are no longer this member's, and a progress
        # event for them would pass for the owner's last sign of life (gold bounds the pause by it).
        if member.owned and not member.partitions_taken:
            keys = sorted(member.owned)
            shown = keys[:MAX_PROGRESS_PARTITIONS]
            rows = []
            for tp in self._consumer.position([TopicPartition(t, p) for t, p in shown]):
                key = (tp.topic, tp.partition)
                frontier = self._processed.frontier(key, tp.offset)
                previous = member.frontier.get(key)
                processed = max(0, frontier - previous) if frontier is not None and previous is not None else 0
                if frontier is not None:
                    member.frontier[key] = frontier
                _low, high = self._consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition),
                                                                  cached=True)
                lag = high - tp.offset if high >= 0 and tp.offset >= 0 else None
                rows.append(contract.PartitionProgress(
                    topic=tp.topic, partition=tp.partition, position=max(tp.offset, contract.OFFSET_UNKNOWN),
                    last_processed_offset=self._processed.last_offset(key, tp.offset),
                    committed_offset=member.committed.get(key, contract.OFFSET_UNKNOWN), processed=processed,
                    lag=lag))
            self._emit("progress", contract.Progress(interval_ms=interval_ms, partitions=rows,
                                                     truncated=len(keys) - len(shown)))
        self._emit_health()
