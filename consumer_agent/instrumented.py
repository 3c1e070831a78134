"""``InstrumentedConsumer``: a drop-in ``confluent_kafka.Consumer`` that reports what rebalances cost.

Outline:
- It subclasses ``Consumer``, so every method and ``isinstance`` checks behave as before;
  only ``subscribe``, ``poll``, ``consume``, ``commit``, ``unsubscribe`` and ``close`` are
  wrapped, plus the ``on_commit`` and ``stats_cb`` callbacks (chained to the application's).
- The rebalance callbacks are wrapped: record, (commit-on-revoke), call the application's
  callback with the same arguments, record its duration. They run on the application
  thread inside ``poll()``/``consume()``/``close()``, exactly as without the agent.
- The hot path is one attribute check per poll()/consume() call. The slow path (looking
  at the returned messages) runs in explicit mode, while a newly assigned partition
  awaits its first record, and once per progress interval, when the emitter thread arms
  it; errors returned by poll (max.poll.interval.ms exceeded, ...) are seen there: the
  first poll after a stall longer than the interval always takes it. (A per-call clock
  read plus an error check per message measured ~0.3 us per poll, 15-50 % of a plain
  poll: too much for the >= 0.98 target.) What the application processed is read from ``position()`` when it matters (callbacks,
  progress ticks): in the default mode every record handed out before the current poll
  counts as processed. Explicit mode (``mark_processed``) pays per-record bookkeeping.
- Events are plain dicts handed to ``TelemetryEmitter`` (bounded, asynchronous). Telemetry
  code never raises into the host: failures are counted and logged once.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from consumer_agent import events as ev
from consumer_agent.emitter import TelemetryEmitter
from consumer_agent.group_metadata import generation_from_metadata
from consumer_agent.inflight import InFlight, Key
from consumer_agent.lifecycle import LIFECYCLES
from consumer_agent.member_states import is_allowed
from consumer_agent.options import split_config
from consumer_agent.redaction import redacted_config
from consumer_agent.version import AGENT_VERSION

log = logging.getLogger("consumer_agent")

MAX_PROGRESS_PARTITIONS = 100
# A partition that hands out no record this long after its assignment stops being watched for its
# first fetch, so idle partitions cannot keep the slow path on. It loses nothing: a backlog (the
# records a previous owner left uncommitted, i.e. the duplicates) is fetched at once after assignment.
FIRST_FETCH_WATCH_S = 30.0
CLOSE_FLUSH_TIMEOUT_S = 5.0
SENTINEL_PREFIX = "__rebalance_lens_"
# How long an accepted enforce_rebalance call blocks the next one unless a callback or a new
# generation shows its rebalance first: KIP-848 members learn a new epoch within a heartbeat (5 s).
ENFORCE_SETTLE_S = 10.0
_FENCING_CODES = frozenset(getattr(KafkaError, name) for name in (
    "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID")
    if hasattr(KafkaError, name))
_monotonic = time.monotonic
_base_poll = Consumer.poll
_base_consume = Consumer.consume

RebalanceCallback = Callable[[Consumer, list[TopicPartition]], None]


def _flag(value: Any, default: bool) -> bool:
    if value is None:
        return default
    return value if isinstance(value, bool) else str(value).lower() in ("true", "1")


def _rebalance_protocol(config: dict[str, Any]) -> tuple[str, str, str]:
    """(group_protocol, rebalance_protocol, assignor) from config: Python exposes no rebalance_protocol()."""
    if str(config.get("group.protocol", "classic")).lower() == "consumer":
        return "consumer", "cooperative", str(config.get("group.remote.assignor") or "broker-default")
    strategy = str(config.get("partition.assignment.strategy", "range,roundrobin"))
    return "classic", "cooperative" if "cooperative-sticky" in strategy else "eager", strategy


class InstrumentedConsumer(Consumer):
    """A ``confluent_kafka.Consumer`` that emits rebalance telemetry (schema v1) to a Kafka topic.

    Args:
        config: any ``Consumer`` configuration plus the agent's ``lens.*`` options, which are
            removed before librdkafka sees the config:
            ``lens.telemetry.topic`` (required), ``lens.telemetry.<producer setting>`` (the
            telemetry producer; defaults to the consumer's bootstrap and security settings),
            ``lens.commit.on.revoke`` (False), ``lens.commit.on.revoke.timeout.ms`` (30000),
            ``lens.processing`` ("on_next_poll" or "explicit"), ``lens.progress.interval.ms``
            (5000), ``lens.buffer.max.events`` (10000).

    Raises:
        ValueError / TypeError: an agent option is missing, unknown or malformed.
        KafkaException: librdkafka rejects the consumer config (as ``Consumer`` would).
    """

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        options, consumer_config = split_config(config)
        self._options = options
        self._explicit = options.processing == "explicit"
        self._config_snapshot = redacted_config(consumer_config)
        self._app_on_commit = consumer_config.pop("on_commit", None)
        self._app_stats_cb = consumer_config.pop("stats_cb", None)
        consumer_config["on_commit"] = self._on_commit
        if consumer_config.get("statistics.interval.ms") not in (None, 0, "0"):
            consumer_config["stats_cb"] = self._on_stats
        self._group_protocol, self._rebalance_protocol, self._assignor = _rebalance_protocol(consumer_config)
        self._cooperative = self._rebalance_protocol == "cooperative"
        self._lifecycle = LIFECYCLES[self._group_protocol]
        self._consumer_config = consumer_config
        self._auto_commit = _flag(consumer_config.get("enable.auto.commit"), True)
        self._agent_id = uuid.uuid4().hex
        self._seq = itertools.count()
        self._identity = {
            "schema_version": ev.SCHEMA_VERSION, "agent_id": self._agent_id,
            "group_id": str(consumer_config.get("group.id", "")),
            "group_instance_id": consumer_config.get("group.instance.id"),
            "client_id": str(consumer_config.get("client.id", "rdkafka")),
            "host": socket.gethostname(), "pid": os.getpid(),
            "group_protocol": self._group_protocol, "rebalance_protocol": self._rebalance_protocol,
            "assignor": self._assignor,
        }
        # Agent state, all touched on the application thread except where noted.
        self._state = str(self._lifecycle.left[-1].value)
        self._subscription: list[str] | None = None       # None while unsubscribed
        self._reported_topics: list[str] | None = None    # the subscription of the last member_config event
        self._app_callbacks: tuple[RebalanceCallback | None, ...] = (None, None, None)
        self._owned: set[Key] = set()
        self._committed: dict[Key, int] = {}
        self._awaiting_first: dict[Key, float] = {}
        self._frontier: dict[Key, int] = {}     # processed frontier at the last progress tick
        self._inflight = InFlight()
        # The hot path looks at returned messages only while _hook is True: in explicit mode, while a
        # new partition awaits its first record, and for one poll after each progress interval.
        self._tick_due = False
        self._hook = self._explicit
        self._in_revoke = False
        self._leaving = False
        self._closed = False
        self._pending_manual_async = 0
        self._enforce_calls = 0     # accepted enforce_rebalance calls: numbers the sentinel patterns
        self._enforced_at: tuple[float, int] | None = None  # (monotonic time, generation) of the last one
        self._last_tick = _monotonic()
        super().__init__(consumer_config, **kwargs)
        self._emitter = TelemetryEmitter(options.telemetry_topic, options.producer_config,
                                         options.buffer_max_events, key=self._agent_id,
                                         heartbeat=(options.progress_interval_ms / 1000, self._arm_tick))

    # ------------------------------------------------------------------ public API
    @property
    def agent_id(self) -> str:
        """This agent instance's id: the key of its telemetry records and the scope of ``seq``."""
        return self._agent_id

    def telemetry_stats(self) -> dict[str, int]:
        """Telemetry events dropped (buffer full or undeliverable), buffered now, and emitter errors."""
        return {"dropped": self._emitter.dropped_total, "buffered": self._emitter.buffered,
                "errors": self._emitter.errors_total}

    def subscribe(self, topics: list[str], on_assign: RebalanceCallback | None = None,
                  on_revoke: RebalanceCallback | None = None, on_lost: RebalanceCallback | None = None) -> None:
        """``Consumer.subscribe``; the application's callbacks are called with identical semantics.

        Lost partitions go to ``on_lost`` when given, else to ``on_revoke``, as in confluent-kafka.
        """
        super().subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
        self._app_callbacks = (on_assign, on_revoke, on_lost)
        self._enforced_at = None
        self._guard(self._record_subscribe, list(topics))

    def poll(self, timeout: float = -1) -> Message | None:
        """``Consumer.poll``; the hot path adds one attribute check."""
        msg = _base_poll(self, timeout)
        if self._hook:
            self._hooked([msg] if msg is not None else ())
        return msg

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """``Consumer.consume``; the hot path adds one attribute check per batch."""
        msgs = _base_consume(self, num_messages, timeout)
        if self._hook:
            self._hooked(msgs)
        return msgs

    def commit(self, *args: Any, **kwargs: Any) -> list[TopicPartition] | None:
        """``Consumer.commit``; synchronous results are recorded here, asynchronous ones via on_commit."""
        asynchronous = kwargs.get("asynchronous", args[2] if len(args) > 2 else True)
        if asynchronous:
            result = super().commit(*args, **kwargs)
            self._pending_manual_async += 1
            return result
        start = _monotonic()
        try:
            result = super().commit(*args, **kwargs)
        except KafkaException as exc:
            self._guard(self._record_commit, "manual", True, self._requested_offsets(args, kwargs), str(exc),
                        (_monotonic() - start) * 1000)
            raise
        self._guard(self._record_commit, "manual", True, result or [], None, (_monotonic() - start) * 1000)
        return result

    def mark_processed(self, msg: Message) -> None:
        """Explicit mode: ``msg`` is processed; its offset may be committed and it is no longer in flight.

        Thread-safe (call it from worker threads or asyncio tasks). In the default
        ``on_next_poll`` mode the next poll already counts the record, so this does nothing.
        """
        if self._explicit:
            self._inflight.mark((msg.topic(), msg.partition()), msg.offset())

    def enforce_rebalance(self, reason: str) -> bool:
        """Ask the group to rebalance, in the spirit of KIP-568; non-blocking.

        librdkafka has no enforceRebalance (KIP-568 is "Not supported"), and re-subscribing
        an unchanged subscription is no change. So each accepted call changes the
        subscription for real and back: it subscribes to the application's topics plus a
        fresh per-member sentinel pattern ``^__rebalance_lens_<agent_id>_<n>$``, then at
        once to the application's topics alone (same callbacks). The pattern can never
        fully match a real topic (KIP-848 evaluates it broker-side with RE2/J, full match),
        so no partition is added or removed; but the sentinel IS visible outside this
        process: the broker (KIP-848 SubscribedTopicRegex) and the group see the
        subscription change. ``member_config`` telemetry keeps reporting the application's
        own topics. What a call does, measured on Kafka 4.2 with librdkafka 2.16
        (tests/agent/test_enforce_rebalance.py, two consecutive calls):
        - KIP-848 (group.protocol=consumer): every call moves EVERY member to a new member
          epoch; nothing is revoked (the broker's assignors are sticky, owners stay);
        - classic cooperative-sticky: the first call rebalances the whole group (new
          generation on every member, nothing revoked); later calls change nothing.
          librdkafka puts the matched topics, not the patterns, in JoinGroup, so a pattern
          matching nothing is invisible to the coordinator; it rejoins only when the new
          wildcard subscription first makes it fetch full-topic metadata;
        - classic eager (range, roundrobin): a subscription change makes librdkafka revoke
          ALL of this member's partitions and rejoin, by design of the eager protocol.
          The group moves to a new generation (revoking everyone's partitions) only when
          this member leads the group; otherwise only this member's partitions cycle.
        It cannot: choose the new owners, move a partition, rebalance a classic
        cooperative-sticky group more than once, or tell the caller that the group really
        rebalanced. Every call is recorded as a
        ``rebalance_requested`` event.

        Returns:
            True when the subscription change was issued; False when the consumer is not
            subscribed, a rebalance is in progress, or the previous accepted call has not
            yet shown a rebalance (no callback and the same generation) within
            ``ENFORCE_SETTLE_S``.
        """
        accepted = (self._subscription is not None and not self._leaving and not self._closed
                    and self._state in self._lifecycle.stable and not self._enforce_pending())
        if accepted:
            self._enforce_calls += 1
            self._enforced_at = (_monotonic(), self._generation())
            sentinel = f"^{SENTINEL_PREFIX}{self._agent_id}_{self._enforce_calls}$"
            for topics in ([*self._subscription, sentinel], self._subscription):
                super().subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                  on_lost=self._on_lost)
        self._guard(self._emit, "rebalance_requested",
                    ev.RebalanceRequested(reason=str(reason), mechanism=self._enforce_mechanism(),
                                          accepted=accepted))
        return accepted

    def unsubscribe(self) -> None:
        self._leaving = True
        self._guard(self._enter, self._lifecycle.leave_start, "unsubscribe")
        super().unsubscribe()
        self._subscription = None
        if not self._owned:
            self._guard(self._enter, self._lifecycle.left, "unsubscribe")

    def close(self, *args: Any, **kwargs: Any) -> None:
        """``Consumer.close``, then a bounded flush of the telemetry (at most 5 s)."""
        if self._closed:
            return super().close(*args, **kwargs)
        self._leaving = True
        self._guard(self._enter, self._lifecycle.leave_start, "close")
        try:
            super().close(*args, **kwargs)
        finally:
            self._closed = True
            self._guard(self._enter, self._lifecycle.left, "close")
            if self._emitter.needs_health_report():
                self._guard(self._emit_health)
            self._emitter.close(CLOSE_FLUSH_TIMEOUT_S)

    # ------------------------------------------------------------------ rebalance callbacks
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._enforced_at = None
        self._guard(self._enter_assign)
        start = _monotonic()
        try:
            if self._app_callbacks[0] is not None:
                self._app_callbacks[0](consumer, partitions)
        finally:
            self._guard(self._record_assign, partitions, (_monotonic() - start) * 1000)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._enforced_at = None
        if not self._leaving:
            self._guard(self._enter, self._lifecycle.in_revoke, "revoke callback")
        self._in_revoke = True
        hold = (self._guard(self._commit_before_handover, partitions)
                if self._options.commit_on_revoke and partitions else None)
        start = _monotonic()
        try:
            if self._app_callbacks[1] is not None:
                self._app_callbacks[1](consumer, partitions)
        finally:
            self._in_revoke = False
            self._guard(self._record_release, "partitions_revoked", partitions, (_monotonic() - start) * 1000,
                        hold)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._state not in self._lifecycle.stale:
            self._guard(self._enter, self._lifecycle.in_lost, "lost callback")
        start = _monotonic()
        app_callback = self._app_callbacks[2] or self._app_callbacks[1]
        try:
            if app_callback is not None:
                app_callback(consumer, partitions)
        finally:
            self._guard(self._record_release, "partitions_lost", partitions, (_monotonic() - start) * 1000, None)

    # ------------------------------------------------------------------ recording (never raises)
    def _guard(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run telemetry code; count and log (once) any failure instead of raising into the host."""
        try:
            return fn(*args)
        except Exception as exc:
            self._emitter_note(f"agent: {fn.__name__}: {exc!r}")
            return None

    def _emitter_note(self, message: str) -> None:
        emitter = getattr(self, "_emitter", None)
        if emitter is not None:
            emitter._note_error(message)
        else:
            log.warning("rebalance-lens: %s", message)

    def _emit(self, kind: str, body: ev.Body) -> None:
        try:
            generation = generation_from_metadata(self.consumer_group_metadata())
            member_id = self.memberid()
        except (RuntimeError, KafkaException):
            generation, member_id = -1, None
        self._emitter.offer({
            "event_id": uuid.uuid4().hex, "kind": kind, "event_time_ms": time.time_ns() // 1_000_000,
            "seq": next(self._seq), "member_id": member_id, "generation": generation,
            **self._identity, "body": ev.to_dict(body)})

    def _enter(self, path: Sequence[str], reason: str) -> None:
        for state in path:
            state = str(getattr(state, "value", state))
            if state == self._state:
                continue
            allowed = is_allowed(self._group_protocol, self._state, state)
            self._emit("state_transition", ev.StateTransition(from_state=self._state, to_state=state,
                                                              reason=reason, allowed=allowed))
            self._state = state

    def _enter_assign(self) -> None:
        if self._state in self._lifecycle.rejoin_from:
            self._enter(self._lifecycle.subscribed, "rejoin")
        self._enter(self._lifecycle.in_assign, "assign callback")

    def _record_subscribe(self, topics: list[str]) -> None:
        changed = topics != self._reported_topics
        reason = "start" if self._reported_topics is None else "subscription_changed"
        self._subscription = self._reported_topics = topics
        self._leaving = False
        if changed:
            self._emit("member_config", self._member_config(reason, topics))
        self._enter(self._lifecycle.subscribed, "subscribe")

    def _member_config(self, reason: str, topics: list[str]) -> ev.MemberConfig:
        c = self._consumer_config
        classic = self._group_protocol == "classic"
        patterns = [t for t in topics if t.startswith("^")]
        return ev.MemberConfig(
            reason=reason, topics=[t for t in topics if not t.startswith("^")],
            pattern="|".join(patterns) if patterns else None,
            session_timeout_ms=int(c.get("session.timeout.ms", 45_000)) if classic else None,
            heartbeat_interval_ms=int(c.get("heartbeat.interval.ms", 3_000)) if classic else None,
            max_poll_interval_ms=int(c.get("max.poll.interval.ms", 300_000)),
            enable_auto_commit=self._auto_commit,
            auto_commit_interval_ms=int(c.get("auto.commit.interval.ms", 5_000)),
            enable_auto_offset_store=_flag(c.get("enable.auto.offset.store"), True),
            commit_on_revoke=self._options.commit_on_revoke, config=self._config_snapshot,
            agent_version=AGENT_VERSION, client_version=confluent_kafka.version()[0],
            librdkafka_version=confluent_kafka.libversion()[0])

    def _partition_states(self, partitions: list[TopicPartition]) -> list[ev.PartitionState]:
        positions = self.position([TopicPartition(tp.topic, tp.partition) for tp in partitions])
        return [ev.PartitionState(topic=tp.topic, partition=tp.partition, position=max(tp.offset, ev.OFFSET_UNKNOWN),
                                  last_processed_offset=self._last_processed((tp.topic, tp.partition), tp.offset),
                                  committed_offset=self._committed.get((tp.topic, tp.partition), ev.OFFSET_UNKNOWN))
                for tp in positions]

    def _last_processed(self, key: Key, position: int) -> int:
        if self._explicit:
            return self._inflight.last_processed(key)
        return position - 1 if position > 0 else ev.OFFSET_UNKNOWN

    def _processed_frontier(self, key: Key, position: int) -> int | None:
        """Next offset after the processed records: the position (default) or the in-flight low mark."""
        if self._explicit:
            return self._inflight.commit_offset(key)
        return position if position >= 0 else None

    def _record_assign(self, partitions: list[TopicPartition], callback_ms: float) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        if not self._cooperative:
            self._owned = set()
        self._owned.update(keys)
        now = _monotonic()
        for key in keys:
            self._awaiting_first[key] = now
        self._rearm()
        self._emit("partitions_assigned", ev.PartitionsChange(
            partitions=self._partition_states(partitions), incremental=self._cooperative, callback_ms=callback_ms,
            assignment_size=len(self._owned), commit_on_revoke=None))
        self._enter(self._lifecycle.stable, "assign callback done")

    def _record_release(self, kind: str, partitions: list[TopicPartition], callback_ms: float,
                        hold: ev.CommitOnRevoke | None) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        states = self._partition_states(partitions)
        if self._cooperative:
            self._owned.difference_update(keys)
        else:
            self._owned = set()
        for key in keys:
            self._awaiting_first.pop(key, None)
            self._frontier.pop(key, None)
            self._committed.pop(key, None)
        self._inflight.forget(keys)
        self._rearm()
        self._emit(kind, ev.PartitionsChange(partitions=states, incremental=self._cooperative, callback_ms=callback_ms,
                                             assignment_size=len(self._owned), commit_on_revoke=hold))
        if self._leaving:
            self._enter(self._lifecycle.leave_after_revoke, "revoke callback (leaving)")
        elif kind == "partitions_lost":
            if self._state not in self._lifecycle.stale:
                self._enter(self._lifecycle.after_lost, "lost callback done")
        else:
            self._enter(self._lifecycle.after_revoke, "revoke callback done")

    def _commit_before_handover(self, partitions: list[TopicPartition]) -> ev.CommitOnRevoke:
        """Commit-on-revoke: wait (bounded) for in-flight work on ``partitions``, then commit it synchronously."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        start = _monotonic()
        drained = self._inflight.wait_drained(keys, self._options.commit_on_revoke_timeout_ms / 1000) \
            if self._explicit else True
        waited_ms = (_monotonic() - start) * 1000
        offsets = []
        for tp in self.position([TopicPartition(t, p) for t, p in keys]):
            key = (tp.topic, tp.partition)
            offset = self._processed_frontier(key, tp.offset)
            if offset is not None and offset >= 0 and offset != self._committed.get(key):
                offsets.append(TopicPartition(tp.topic, tp.partition, offset))
        if not offsets:
            return ev.CommitOnRevoke(waited_ms=waited_ms, timed_out=not drained, committed=True, error=None)
        try:
            result = self.commit(offsets=offsets, asynchronous=False) or []
        except KafkaException as exc:
            return ev.CommitOnRevoke(waited_ms=waited_ms, timed_out=not drained, committed=False, error=str(exc))
        failed = [f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in result if tp.error is not None]
        return ev.CommitOnRevoke(waited_ms=waited_ms, timed_out=not drained, committed=not failed,
                                 error="; ".join(failed) or None)

    @staticmethod
    def _requested_offsets(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[TopicPartition]:
        message = kwargs.get("message", args[0] if args else None)
        offsets = kwargs.get("offsets", args[1] if len(args) > 1 else None)
        if offsets:
            return list(offsets)
        if message is not None:
            return [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
        return []

    def _record_commit(self, mode: str, sync: bool, partitions: list[TopicPartition], error: str | None,
                       duration_ms: float | None) -> None:
        offsets = []
        for tp in partitions:
            tp_error = None if tp.error is None else str(tp.error)
            if error is None and tp_error is None and tp.offset >= 0 and (tp.topic, tp.partition) in self._owned:
                self._committed[(tp.topic, tp.partition)] = tp.offset
            offsets.append(ev.CommittedOffset(topic=tp.topic, partition=tp.partition,
                                              offset=max(tp.offset, ev.OFFSET_UNKNOWN), error=tp_error))
        self._emit("commit", ev.Commit(mode=mode, sync=sync, in_revoke=self._in_revoke, offsets=offsets,
                                       error=error, duration_ms=duration_ms))

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """librdkafka's offset-commit callback: asynchronous manual commits and auto commits."""
        try:
            if err is None or err.code() != KafkaError._NO_OFFSET:
                if self._pending_manual_async > 0:
                    self._pending_manual_async -= 1
                    mode = "manual"
                else:
                    mode = "auto" if self._auto_commit else "manual"
                self._record_commit(mode, False, partitions, None if err is None else str(err), None)
        except Exception as exc:
            self._emitter_note(f"agent: on_commit: {exc!r}")
        if self._app_on_commit is not None:
            self._app_on_commit(err, partitions)

    def _on_stats(self, stats_json: str) -> None:
        try:
            cgrp = json.loads(stats_json).get("cgrp")
            if cgrp:
                self._emit("client_stats", ev.ClientStats(
                    state=str(cgrp.get("state", "")), stateage_ms=int(cgrp.get("stateage", 0)),
                    join_state=str(cgrp.get("join_state", "")), rebalance_age_ms=int(cgrp.get("rebalance_age", 0)),
                    rebalance_cnt=int(cgrp.get("rebalance_cnt", 0)),
                    rebalance_reason=str(cgrp.get("rebalance_reason", "")),
                    assignment_size=int(cgrp.get("assignment_size", 0))))
        except Exception as exc:
            self._emitter_note(f"agent: stats: {exc!r}")
        if self._app_stats_cb is not None:
            self._app_stats_cb(stats_json)

    # ------------------------------------------------------------------ slow paths of poll/consume
    def _arm_tick(self) -> None:
        """Emitter thread, every progress interval: make the next poll take the slow path once."""
        self._tick_due = True
        self._hook = True

    def _rearm(self) -> None:
        self._hook = self._explicit or bool(self._awaiting_first) or self._tick_due

    def _hooked(self, msgs: Sequence[Message]) -> None:
        for msg in msgs:
            self._observe(msg)
        if self._tick_due:
            self._tick_due = False
            self._guard(self._tick)
            self._rearm()

    def _observe(self, msg: Message) -> None:
        """Look at one returned message: errors, first fetch after assignment, explicit in-flight."""
        try:
            err = msg.error()
            if err is not None:
                self._record_poll_error(err)
                return
            key = (msg.topic(), msg.partition())
            if self._explicit:
                self._inflight.handed_out(key, msg.offset())
            if self._awaiting_first:
                assigned_at = self._awaiting_first.pop(key, None)
                if assigned_at is not None:
                    self._frontier[key] = msg.offset()
                    self._emit("first_fetch", ev.FirstFetch(topic=key[0], partition=key[1], offset=msg.offset(),
                                                            since_assign_ms=(_monotonic() - assigned_at) * 1000))
                    self._rearm()
        except Exception as exc:
            self._emitter_note(f"agent: observe: {exc!r}")

    def _record_poll_error(self, err: KafkaError) -> None:
        code = err.code()
        if code == KafkaError._PARTITION_EOF:
            return
        self._emit("client_error", ev.ClientError(code=code, name=err.name(), message=err.str(), fatal=err.fatal()))
        if code == KafkaError._MAX_POLL_EXCEEDED:
            self._enter(self._lifecycle.stale, "max.poll.interval.ms exceeded")
        elif code in _FENCING_CODES:
            self._enter(self._lifecycle.fenced, f"fenced: {err.name()}")

    def _tick(self) -> None:
        """Periodic progress per owned partition, plus agent_health while drops or errors are unreported."""
        now = _monotonic()
        interval_ms = (now - self._last_tick) * 1000
        self._last_tick = now
        for key, assigned_at in list(self._awaiting_first.items()):
            if now - assigned_at > FIRST_FETCH_WATCH_S:
                del self._awaiting_first[key]
        if self._owned:
            keys = sorted(self._owned)
            shown = keys[:MAX_PROGRESS_PARTITIONS]
            rows = []
            for tp in self.position([TopicPartition(t, p) for t, p in shown]):
                key = (tp.topic, tp.partition)
                frontier = self._processed_frontier(key, tp.offset)
                previous = self._frontier.get(key)
                processed = max(0, frontier - previous) if frontier is not None and previous is not None else 0
                if frontier is not None:
                    self._frontier[key] = frontier
                _low, high = self.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), cached=True)
                lag = high - tp.offset if high >= 0 and tp.offset >= 0 else None
                rows.append(ev.PartitionProgress(
                    topic=tp.topic, partition=tp.partition, position=max(tp.offset, ev.OFFSET_UNKNOWN),
                    last_processed_offset=self._last_processed(key, tp.offset),
                    committed_offset=self._committed.get(key, ev.OFFSET_UNKNOWN), processed=processed, lag=lag))
            self._emit("progress", ev.Progress(interval_ms=interval_ms, partitions=rows,
                                               truncated=len(keys) - len(shown)))
        if self._emitter.needs_health_report():
            self._emit_health()

    def _emit_health(self) -> None:
        e = self._emitter
        self._emit("agent_health", ev.AgentHealth(
            dropped_total=e.dropped_total, dropped_since_last=max(0, e.dropped_total - e.acknowledged_dropped),
            buffer_size=e.buffered, buffer_capacity=e.capacity, emitter_errors_total=e.errors_total,
            last_error=e.last_error))

    def _generation(self) -> int:
        try:
            return generation_from_metadata(self.consumer_group_metadata())
        except (RuntimeError, KafkaException):
            return -1

    def _enforce_pending(self) -> bool:
        """The last accepted call has shown no rebalance yet (no callback, same generation), for a while."""
        if self._enforced_at is None:
            return False
        at, generation = self._enforced_at
        if _monotonic() - at > ENFORCE_SETTLE_S or self._generation() != generation:
            self._enforced_at = None
            return False
        return True

    def _enforce_mechanism(self) -> str:
        if self._group_protocol == "consumer":
            return "sentinel-pattern-toggle (KIP-848: new member epoch on every member, nothing revoked)"
        if self._cooperative:
            return ("sentinel-pattern-toggle (cooperative-sticky: the first call rebalances the group without "
                    "revocation; later calls change nothing)")
        return ("sentinel-pattern-toggle (eager: revokes this member's partitions and rejoins; "
                "group-wide rebalance only if this member leads the group)")
