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
  poll: too much for the >= 0.98 target.) What the application processed is read from
  ``position()`` when it matters (callbacks, progress ticks): in the default mode every
  record handed out before the current poll counts as processed. Explicit mode
  (``mark_processed``) pays per-record bookkeeping.
- This class is the wrapping and the public API; each responsibility behind it is a
  collaborator in its own module: ``Membership`` (member state, owned partitions,
  commits), ``RevokeCommitter`` (commit-on-revoke), ``RebalanceEnforcer``
  (``enforce_rebalance``), ``Progress`` (the slow path; it sets the hot path's flag) and
  ``Processed`` (what the application has processed).
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
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from consumer_agent import contract
from consumer_agent.commit_on_revoke import RevokeCommitter
from consumer_agent.emitter import TelemetryEmitter
from consumer_agent.enforce_rebalance import RebalanceEnforcer
from consumer_agent.group_metadata import generation_from_metadata
from consumer_agent.membership import Membership
from consumer_agent.options import split_config
from consumer_agent.processed import Processed
from consumer_agent.progress import Progress
from consumer_agent.redaction import redacted_config

log = logging.getLogger("consumer_agent")

CLOSE_FLUSH_TIMEOUT_S = 5.0
_monotonic = time.monotonic
_base_poll = Consumer.poll
_base_consume = Consumer.consume

RebalanceCallback = Callable[[Consumer, list[TopicPartition]], None]


def _rebalance_protocol(config: dict[str, Any]) -> tuple[str, str, str]:
    """(group_protocol, rebalance_protocol, assignor) from config: Python exposes no rebalance_protocol()."""
    if str(config.get("group.protocol", "classic")).lower() == "consumer":
        return "consumer", "cooperative", str(config.get("group.remote.assignor") or "broker-default")
    strategy = str(config.get("partition.assignment.strategy", "range,roundrobin"))
    return "classic", "cooperative" if "cooperative-sticky" in strategy else "eager", strategy


def _requested_offsets(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[TopicPartition]:
    """The offsets a ``commit(*args, **kwargs)`` call asked for (to report a commit that raised)."""
    message = kwargs.get("message", args[0] if args else None)
    offsets = kwargs.get("offsets", args[1] if len(args) > 1 else None)
    if offsets:
        return list(offsets)
    if message is not None:
        return [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
    return []


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
        config_snapshot = redacted_config(consumer_config)
        self._app_on_commit = consumer_config.pop("on_commit", None)
        self._app_stats_cb = consumer_config.pop("stats_cb", None)
        consumer_config["on_commit"] = self._on_commit
        if consumer_config.get("statistics.interval.ms") not in (None, 0, "0"):
            consumer_config["stats_cb"] = self._on_stats
        group_protocol, rebalance_protocol, assignor = _rebalance_protocol(consumer_config)
        cooperative = rebalance_protocol == "cooperative"
        self._agent_id = uuid.uuid4().hex
        self._seq = itertools.count()
        self._identity = {
            "agent_id": self._agent_id,
            "group_id": str(consumer_config.get("group.id", "")),
            "group_instance_id": consumer_config.get("group.instance.id"),
            "client_id": str(consumer_config.get("client.id", "rdkafka")),
            "host": socket.gethostname(), "pid": os.getpid(),
            "group_protocol": group_protocol, "rebalance_protocol": rebalance_protocol, "assignor": assignor,
        }
        self._app_callbacks: tuple[RebalanceCallback | None, ...] = (None, None, None)
        self._closed = False
        # Inside Consumer.close() the agent asks librdkafka nothing (see _emit); events made then
        # carry the generation and member id of the last event made before.
        self._in_close = False
        self._last_seen: tuple[int, str | None] = (-1, None)
        # The collaborators: all on the application thread, except Progress.arm_tick (emitter thread).
        self._processed = Processed(options.processing == "explicit")
        self._member = Membership(self, self._emit, self._processed, group_protocol=group_protocol,
                                  cooperative=cooperative, options=options, config=consumer_config,
                                  config_snapshot=config_snapshot)
        self._revoke_committer = (RevokeCommitter(self, self._member, self._processed,
                                                  options.commit_on_revoke_timeout_ms / 1000)
                                  if options.commit_on_revoke else None)
        self._enforcer = RebalanceEnforcer(self, self._agent_id, group_protocol, cooperative,
                                           self._subscribe_wrapped)
        # Progress sets self._hook, the flag poll() and consume() test.
        self._progress = Progress(self, self._member, self._processed, emit=self._emit, guard=self._guard,
                                  note=self._emitter_note, emit_health=self._emit_health)
        super().__init__(consumer_config, **kwargs)
        self._emitter = TelemetryEmitter(options.telemetry_topic, options.producer_config,
                                         options.buffer_max_events, key=self._agent_id,
                                         heartbeat=(options.progress_interval_ms / 1000, self._progress.arm_tick))

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
        self._subscribe_wrapped(topics)
        self._app_callbacks = (on_assign, on_revoke, on_lost)
        self._enforcer.settled()
        self._guard(self._member.record_subscribe, list(topics))

    def poll(self, timeout: float = -1) -> Message | None:
        """``Consumer.poll``; the hot path adds one attribute check."""
        msg = _base_poll(self, timeout)
        if self._hook:
            self._progress.hooked([msg] if msg is not None else ())
        return msg

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """``Consumer.consume``; the hot path adds one attribute check per batch."""
        msgs = _base_consume(self, num_messages, timeout)
        if self._hook:
            self._progress.hooked(msgs)
        return msgs

    def commit(self, *args: Any, **kwargs: Any) -> list[TopicPartition] | None:
        """``Consumer.commit``; synchronous results are recorded here, asynchronous ones via on_commit."""
        asynchronous = kwargs.get("asynchronous", args[2] if len(args) > 2 else True)
        if asynchronous:
            result = super().commit(*args, **kwargs)
            self._member.pending_manual_async += 1
            return result
        start = _monotonic()
        try:
            result = super().commit(*args, **kwargs)
        except KafkaException as exc:
            self._guard(self._member.record_commit, "manual", True, _requested_offsets(args, kwargs), str(exc),
                        (_monotonic() - start) * 1000)
            raise
        self._guard(self._member.record_commit, "manual", True, result or [], None, (_monotonic() - start) * 1000)
        return result

    def mark_processed(self, msg: Message) -> None:
        """Explicit mode: ``msg`` is processed; its offset may be committed and it is no longer in flight.

        Thread-safe (call it from worker threads or asyncio tasks). In the default
        ``on_next_poll`` mode the next poll already counts the record, so this does nothing.
        """
        self._processed.mark(msg)

    def enforce_rebalance(self, reason: str) -> bool:
        """Ask the group to rebalance, in the spirit of KIP-568; non-blocking.

        librdkafka has no enforceRebalance, so each accepted call changes the subscription
        for real and back, through a sentinel pattern that matches no topic: no partition is
        added or removed, but the broker and the group see the subscription change
        (``member_config`` telemetry keeps reporting the application's own topics). What a
        call does depends on the protocol (measured; see ``consumer_agent.enforce_rebalance``):
        KIP-848 moves every member to a new member epoch, nothing revoked; classic
        cooperative-sticky rebalances the whole group on the first call only, nothing
        revoked; classic eager revokes this member's partitions and rejoins (group-wide only
        when this member leads the group).
        It cannot: choose the new owners, move a partition, rebalance a classic
        cooperative-sticky group more than once, or tell the caller that the group really
        rebalanced. Every call is recorded as a ``rebalance_requested`` event.

        Returns:
            True when the subscription change was issued; False when the consumer is not
            subscribed, a rebalance is in progress, or the previous accepted call has not
            yet shown a rebalance (no callback and the same generation) within
            ``ENFORCE_SETTLE_S``.
        """
        topics = self._member.subscription
        accepted = (topics is not None and not self._closed and self._member.stable
                    and self._enforcer.request(topics))
        self._guard(self._emit, "rebalance_requested",
                    contract.RebalanceRequested(reason=str(reason), mechanism=self._enforcer.mechanism,
                                                accepted=accepted))
        return accepted

    def unsubscribe(self) -> None:
        self._guard(self._member.start_leaving, "unsubscribe")
        super().unsubscribe()
        self._member.subscription = None
        if not self._member.owned:
            self._guard(self._member.left, "unsubscribe")

    def close(self, *args: Any, **kwargs: Any) -> None:
        """``Consumer.close``, then a bounded flush of the telemetry (at most 5 s).

        With commit-on-revoke the processed frontier is committed first (``commit_before_close``).
        """
        if self._closed:
            return super().close(*args, **kwargs)
        self._guard(self._member.start_leaving, "close")
        if self._revoke_committer is not None:
            self._guard(self._revoke_committer.commit_before_close)
        self._in_close = True
        try:
            super().close(*args, **kwargs)
        finally:
            self._in_close = False
            self._closed = True
            self._guard(self._member.left, "close")
            self._guard(self._emit_health)
            self._emitter.close(CLOSE_FLUSH_TIMEOUT_S)

    # ------------------------------------------------------------------ rebalance callbacks
    def _subscribe_wrapped(self, topics: list[str]) -> None:
        """``Consumer.subscribe`` with the agent's rebalance callbacks (which call the application's)."""
        super().subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._enforcer.settled()
        self._guard(self._member.enter_assign)
        start = _monotonic()
        try:
            if self._app_callbacks[0] is not None:
                self._app_callbacks[0](consumer, partitions)
        finally:
            if not self._closed:  # the application may close the consumer inside its callback: then it left
                self._guard(self._member.record_assign, partitions, (_monotonic() - start) * 1000)
                self._progress.rearm()  # the assignment changed: polls may now watch for first fetches

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._enforcer.settled()
        self._guard(self._member.enter_revoke)
        self._member.in_revoke = True
        hold = (self._guard(self._revoke_committer.commit_before_handover, partitions)
                if self._revoke_committer is not None and partitions else None)
        start = _monotonic()
        try:
            if self._app_callbacks[1] is not None:
                self._app_callbacks[1](consumer, partitions)
        finally:
            self._member.in_revoke = False
            if not self._closed:  # closed inside the callback: close() recorded the leave
                self._guard(self._member.record_release, "partitions_revoked", partitions,
                            (_monotonic() - start) * 1000, hold)
                self._progress.rearm()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._guard(self._member.enter_lost)
        start = _monotonic()
        app_callback = self._app_callbacks[2] or self._app_callbacks[1]
        try:
            if app_callback is not None:
                app_callback(consumer, partitions)
        finally:
            self._guard(self._member.record_release, "partitions_lost", partitions,
                        (_monotonic() - start) * 1000, None)
            self._progress.rearm()

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """librdkafka's offset-commit callback: asynchronous manual commits and auto commits."""
        try:
            self._member.record_async_commit(err, partitions)
        except Exception as exc:
            self._emitter_note(f"agent: on_commit: {exc!r}")
        if self._app_on_commit is not None:
            self._app_on_commit(err, partitions)

    def _on_stats(self, stats_json: str) -> None:
        try:
            cgrp = json.loads(stats_json).get("cgrp")
            if cgrp:
                self._emit("client_stats", contract.ClientStats(
                    state=str(cgrp.get("state", "")), stateage_ms=int(cgrp.get("stateage", 0)),
                    join_state=str(cgrp.get("join_state", "")), rebalance_age_ms=int(cgrp.get("rebalance_age", 0)),
                    rebalance_cnt=int(cgrp.get("rebalance_cnt", 0)),
                    rebalance_reason=str(cgrp.get("rebalance_reason", "")),
                    assignment_size=int(cgrp.get("assignment_size", 0))))
        except Exception as exc:
            self._emitter_note(f"agent: stats: {exc!r}")
        if self._app_stats_cb is not None:
            self._app_stats_cb(stats_json)

    # ------------------------------------------------------------------ emitting (never raises via _guard)
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

    def _emit(self, kind: str, body: contract.Body) -> None:
        """Hand one event to the emitter, with the member's generation and id as the client has them.

        Not while ``Consumer.close()`` runs: close serves the commit and rebalance callbacks, and
        asking the client for its group metadata from a callback served by a close() that the
        application called inside its own rebalance callback deadlocks librdkafka (the host
        blocked for good in 2 of 6 runs: tests/hardening/test_host_callbacks.py,
        close_in_revoke). The last values seen stand in."""
        if self._in_close:
            generation, member_id = self._last_seen
        else:
            try:
                generation = generation_from_metadata(self.consumer_group_metadata())
                member_id = self.memberid()
                self._last_seen = (generation, member_id)
            except (RuntimeError, KafkaException):
                generation, member_id = -1, None
        self._emitter.offer(contract.event(
            kind, contract.to_dict(body), event_id=uuid.uuid4().hex, event_time_ms=time.time_ns() // 1_000_000,
            seq=next(self._seq), member_id=member_id, generation=generation, identity=self._identity))

    def _emit_health(self) -> None:
        """agent_health, while drops or emitter errors are unreported (at each progress tick and on close)."""
        e = self._emitter
        if e.needs_health_report():
            self._emit("agent_health", contract.AgentHealth(
                dropped_total=e.dropped_total, dropped_since_last=max(0, e.dropped_total - e.acknowledged_dropped),
                buffer_size=e.buffered, buffer_capacity=e.capacity, emitter_errors_total=e.errors_total,
                last_error=e.last_error))
