"""The slow path of poll()/consume(): first fetches, poll errors, progress ticks, agent health.

poll() and consume() hand the returned messages to ``Progress.hooked`` only while the
consumer's ``_hook`` flag is True; testing it is all the hot path adds. ``Progress`` owns
that flag and keeps it True only while something needs the messages: in explicit mode
(records go in flight), while a newly assigned partition awaits its first record, for one
poll once the progress interval has passed since the last tick (``arm_tick``), and for one
poll after each gap probe (``beat`` arms both, on the emitter thread).

Ticks (the agent spec's ``progress_gap_probe_share``): the timer's, a progress interval after
the last tick of any cause; one at the poll that hands out a newly assigned partition's first
record; one at a poll that came after a long gap without one. A probe, armed every share of
the interval, finds the gap: the first poll after it ticks if it came at least that long after
it. So a member that dies soon after an assignment or deep in a long batch is bounded from a
recent tick (``pipelines.gold.handoffs``), and a busy poll loop reads no clock.

A first record handed out after the watch ended carries the group's committed offset only
when that is certainly where the fetch started. The offset is asked off the application
thread, and confluent-kafka serializes calls on one client: the question can wait until the
application leaves poll(), by when it may have been handed the first record and committed
past it (issue 37: 1016 reported, the fetch had started at 899). So the answer is only a
candidate; the application thread confirms it at a later tick (``_found_first``) if the
partition's position, read after the answer came, is still unknown (nothing handed out,
so none of its records committed) and the member recorded no commit of it since the
assignment. Otherwise the offset is reported unknown and gold bounds the duplicates
instead of confirming a wrong figure. Blind spots: a commit of a partition the application
has read nothing of that the agent has not yet seen acknowledged (asynchronous, or of
stored offsets), and other clients' commits.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Message, TopicPartition

from consumer_agent import contract
from consumer_agent.agent_spec import constant
from consumer_agent.consumer_view import ConsumerView
from consumer_agent.inflight import Key
from consumer_agent.membership import Emit, Membership
from consumer_agent.processed import Processed

MAX_PROGRESS_PARTITIONS: int = constant("progress_max_partitions")
GAP_PROBE_SHARE: float = constant("progress_gap_probe_share")
TIMER, FIRST_RECORD, POLL_GAP = contract.PROGRESS_CAUSES
# How often the emitter thread calls ``Progress.beat``: the resolution of the timer and of the gap probes
# (the emitter's loop wakes at least this often).
BEAT_S = 0.1
# A partition that hands out no record this long after its assignment stops being watched
# record by record, so an idle partition cannot keep the slow path on. Its first record is
# still reported: the agent asks the group's committed offset (where the fetch started, if
# a tick confirms nothing can have moved it since: see above), and each progress tick looks at
# the partition's position, which librdkafka leaves unknown until a record is handed out.
# A backlogged partition can starve another's fetches well past this (33-99 s seen beside a
# hot partition).
FIRST_FETCH_WATCH_S = 30.0
COMMITTED_TIMEOUT_S = 10.0
_monotonic = time.monotonic


class Progress:
    """Switches the slow path of the consumer's polls and handles what the watched polls return.

    Args:
        consumer: the instrumented consumer's view (positions, committed offsets and watermarks).
        guard: runs telemetry code without raising into the host; ``note`` counts a failure.
        emit_health: emits agent_health while drops or emitter errors are unreported.
        watch_polls: switches the slow path of the consumer's poll() and consume() on or off.
    """

    def __init__(self, consumer: ConsumerView, member: Membership, processed: Processed, *, emit: Emit,
                 guard: Callable[..., Any], note: Callable[[str], None], emit_health: Callable[[], None],
                 watch_polls: Callable[[bool], None], interval_ms: int) -> None:
        self._consumer = consumer
        self._watch_polls = watch_polls
        self._member = member
        self._processed = processed
        self._explicit = processed.explicit
        self._emit = emit
        self._guard = guard
        self._note = note
        self._emit_health = emit_health
        self._interval_ms = interval_ms
        self._gap_s = interval_ms / 1000 * GAP_PROBE_SHARE
        self._tick_cause: str | None = None  # the next hooked poll ticks, for this cause
        self._last_tick = _monotonic()
        self._due_at = self._last_tick + interval_ms / 1000  # the timer: restarted at every tick
        self._probed_at: float | None = None  # a gap probe armed, not yet met by a poll
        self._next_probe = self._last_tick + self._gap_s
        self._to_look_up: list[tuple[Key, float]] = []  # unwatched (partition, assigned at), start not asked yet
        self._lookup: threading.Thread | None = None     # the thread asking, while it runs
        self.rearm()

    def beat(self) -> None:
        """Emitter thread, every beat (a tenth of a second): arm the timer's tick once the interval has
        passed since the last tick (again at every beat until a poll takes it: a poll that turned the slow
        path off just as it was armed cannot lose it), else a gap probe when one is due."""
        now = _monotonic()
        if now >= self._due_at:
            if self._tick_cause != TIMER:
                self.arm_tick()
            else:
                self._watch(True)
        elif self._probed_at is None and now >= self._next_probe:
            self._next_probe = now + self._gap_s
            self._probed_at = now
            self._watch(True)

    def _watch(self, on: bool) -> None:
        try:
            self._watch_polls(on)
        except ReferenceError:  # the consumer was freed meanwhile; its emitter is stopping
            pass

    def arm_tick(self) -> None:
        """Emitter thread, once the progress interval passed since the last tick: ask where newly
        unwatched partitions start, then make the next poll take the slow path once. The question runs
        on a thread of its own, one at a time, so the telemetry never waits for it. The client serializes
        calls: it waits for the application to leave poll(), and the application's next call waits
        for its broker round trip (up to ``COMMITTED_TIMEOUT_S`` if the coordinator is slow)."""
        if self._to_look_up and (self._lookup is None or not self._lookup.is_alive()):
            queued = []
            while self._to_look_up:  # list.pop is atomic: the application thread may append meanwhile
                queued.append(self._to_look_up.pop())
            self._lookup = threading.Thread(target=self._guard, args=(self._look_up_starts, queued),
                                            name="rebalance-lens-start-offsets", daemon=True)
            self._lookup.start()
        self._tick_cause = TIMER
        self._watch(True)

    def _look_up_starts(self, queued: list[tuple[Key, float]]) -> None:
        """The group's committed offsets of the queued (partition, assigned at): candidates for
        where their fetch started, while the same assignment is unwatched (a tick confirms them)."""
        member = self._member
        assigned = dict(queued)
        try:
            answers = self._consumer.committed([TopicPartition(t, p) for t, p in assigned], timeout=COMMITTED_TIMEOUT_S)
        except RuntimeError:  # the application closed the consumer while the question waited: no failure
            return
        for tp in answers:
            key = (tp.topic, tp.partition)
            if tp.error is None and tp.offset >= 0 and member.unwatched.get(key) == assigned[key]:
                member.asked_starts[key] = (assigned[key], tp.offset)

    def rearm(self) -> None:
        """Switch the slow path again: after a tick, a first fetch, or a change of assignment."""
        self._watch_polls(self._explicit or bool(self._member.awaiting_first) or self._tick_cause is not None
                          or self._probed_at is not None)

    def hooked(self, msgs: Sequence[Message]) -> None:
        """The messages a poll()/consume() returned while the slow path was on; a tick if one is due (the
        timer's), a newly assigned partition's first record was among them, or a probe found a long gap."""
        for msg in msgs:
            self._observe(msg)
        probed_at, self._probed_at = self._probed_at, None
        if self._tick_cause is None and probed_at is not None and _monotonic() - probed_at >= self._gap_s:
            self._tick_cause = POLL_GAP
        cause, self._tick_cause = self._tick_cause, None
        if cause is not None:
            self._guard(self._tick, cause)
        if cause is not None or probed_at is not None:
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
                    kind, timestamp = msg.timestamp()
                    self._emit("first_fetch", contract.FirstFetch(
                        topic=key[0], partition=key[1], offset=msg.offset(),
                        since_assign_ms=(_monotonic() - assigned_at) * 1000,
                        timestamp_ms=timestamp if kind != TIMESTAMP_NOT_AVAILABLE else None, seen=True, window_ms=0.0))
                    if self._tick_cause is None:
                        self._tick_cause = FIRST_RECORD
                    self.rearm()
        except Exception as exc:
            self._note(f"agent: observe: {exc!r}")

    def _tick(self, cause: str) -> None:
        """Progress per owned partition, plus agent_health while drops or errors are unreported; the
        timer's next tick falls due an interval from now."""
        now = _monotonic()
        interval_ms = (now - self._last_tick) * 1000
        self._last_tick = now
        self._due_at = now + self._interval_ms / 1000
        member = self._member
        if member.unwatched and not member.partitions_taken:
            self._found_first(now, interval_ms)
        for key, assigned_at in list(member.awaiting_first.items()):
            if now - assigned_at > FIRST_FETCH_WATCH_S and not self._explicit:  # explicit mode sees every record
                del member.awaiting_first[key]
                member.unwatched[key] = assigned_at
                self._to_look_up.append((key, assigned_at))
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
                                                     truncated=len(keys) - len(shown), cause=cause,
                                                     next_due_ms=float(self._interval_ms)))
        self._emit_health()

    def _found_first(self, now: float, window_ms: float) -> None:
        """Report the first record of unwatched partitions whose position moved since the last
        tick: one was handed out within ``window_ms``; its offset is where the fetch started,
        known only if an earlier tick confirmed the looked-up candidate. Candidates are taken
        before the positions are read: a position still unknown then was unknown when each
        answer came, and confirms it (unless the member committed the partition itself)."""
        member = self._member
        answers = {key: member.asked_starts.pop(key) for key in list(member.asked_starts)}
        for tp in self._consumer.position([TopicPartition(t, p) for t, p in member.unwatched]):
            key = (tp.topic, tp.partition)
            if tp.offset < 0:
                answer = answers.get(key)
                if answer is not None and answer[0] == member.unwatched[key] and key not in member.committed:
                    member.start_offsets[key] = answer[1]
                continue
            assigned_at = member.unwatched.pop(key)
            start = member.start_offsets.pop(key, contract.OFFSET_UNKNOWN)
            if start >= 0:
                member.frontier[key] = start
            self._emit("first_fetch", contract.FirstFetch(
                topic=key[0], partition=key[1], offset=start, since_assign_ms=(now - assigned_at) * 1000,
                timestamp_ms=None, seen=False, window_ms=window_ms))
