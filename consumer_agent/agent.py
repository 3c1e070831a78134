"""``Agent``: what an ``InstrumentedConsumer`` records, held so that the consumer stays collectable.

The consumer owns its agent; the agent sees the consumer only through a weak proxy. Nothing
the agent keeps (its collaborators, the callbacks librdkafka holds, the emitter thread and its
progress timer) keeps a consumer alive, so a consumer dropped without ``close()`` is freed
the moment its last reference goes, as a plain ``Consumer`` is, and librdkafka destroys it the
same way: the group sees the member go when its session times out. The consumer's finalizer
then stops the emitter without waiting for it. Neither the finalizer nor the emitter's thread
holds the agent (whose application callbacks may well hold the consumer): a consumer in a
reference cycle with the host's objects is freed by the garbage collector, as a plain one is.

- The rebalance callbacks are wrapped: record, (commit-on-revoke), call the application's
  callback with the same arguments, record its duration and which assignment calls it made
  (``assign``/``unassign`` there fail under KIP-848: the readiness lint reads them). They run
  on the application thread inside ``poll()``/``consume()``/``close()``, exactly as without the agent.
- Each responsibility is a collaborator in its own module: ``Membership`` (member state,
  owned partitions, commits), ``RevokeCommitter`` (commit-on-revoke), ``RebalanceEnforcer``
  (``enforce_rebalance``), ``Progress`` (the slow path of poll; it sets the consumer's hot-path
  flag) and ``Processed`` (what the application has processed).
- Events are plain dicts handed to ``TelemetryEmitter`` (bounded, asynchronous). Telemetry
  code never raises into the host: failures are counted and logged once (``guard``).
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from consumer_agent import contract
from consumer_agent.agent_spec import constant, cooperative
from consumer_agent.commit_on_revoke import RevokeCommitter
from consumer_agent.consumer_view import ConsumerControls, ConsumerView
from consumer_agent.emitter import TelemetryEmitter
from consumer_agent.enforce_rebalance import RebalanceEnforcer
from consumer_agent.group_metadata import generation_from_metadata
from consumer_agent.lifecycle import REASONS
from consumer_agent.membership import Membership
from consumer_agent.options import AgentOptions
from consumer_agent.processed import Processed
from consumer_agent.progress import BEAT_S, Progress
from consumer_agent.redaction import redacted_config

log = logging.getLogger("consumer_agent")

CLOSE_FLUSH_TIMEOUT_S: float = constant("close_flush_timeout_ms") / 1000
_monotonic = time.monotonic

RebalanceCallback = Callable[[Consumer, list[TopicPartition]], None]


def _rebalance_protocol(config: dict[str, Any]) -> tuple[str, str, str]:
    """(group_protocol, rebalance_protocol, assignor) from config: Python exposes no rebalance_protocol()."""
    if str(config.get("group.protocol", "classic")).lower() == "consumer":
        return "consumer", "cooperative", str(config.get("group.remote.assignor") or "broker-default")
    strategy = str(config.get("partition.assignment.strategy", "range,roundrobin"))
    return "classic", "cooperative" if cooperative(strategy) else "eager", strategy


def _take_callback(config: dict[str, Any], key: str) -> Callable[..., Any] | None:
    """Remove the application's ``key`` callback from ``config`` for the agent to chain to it.
    Anything not callable stays where it is, for librdkafka to refuse in its own words."""
    if callable(config.get(key)):
        return config.pop(key)
    return None


def _weakly(method: Callable[[], None]) -> Callable[[], None]:
    """``method``, called through a weak reference while its object lives. The emitter's thread is
    a GC root while it runs: through a strong reference it would keep the agent alive, hence the
    application's callbacks, hence whatever they hold (often the consumer itself)."""
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()
    return call


def requested_offsets(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[TopicPartition]:
    """The offsets a ``commit(*args, **kwargs)`` call asked for (to report a commit that raised)."""
    message = kwargs.get("message", args[0] if args else None)
    offsets = kwargs.get("offsets", args[1] if len(args) > 1 else None)
    if offsets:
        return list(offsets)
    if message is not None:
        return [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
    return []


class Agent:
    """One consumer's telemetry: identity, collaborators, wrapped callbacks and the emitter.

    Args:
        options: the validated ``lens.*`` options.
        config: the consumer config without them; ``client_config`` is what librdkafka gets
            (the agent's on_commit and stats callbacks chained to the application's).
    """

    def __init__(self, options: AgentOptions, config: dict[str, Any]) -> None:
        self._options = options
        self._config_snapshot = redacted_config(config)
        client = dict(config)
        self._app_on_commit = _take_callback(client, "on_commit")
        self._app_stats_cb = _take_callback(client, "stats_cb")
        client.setdefault("on_commit", self._on_commit)
        if client.get("statistics.interval.ms") not in (None, 0, "0"):
            client.setdefault("stats_cb", self._on_stats)
        self.client_config = client
        self._group_protocol, rebalance_protocol, assignor = _rebalance_protocol(client)
        self._cooperative = rebalance_protocol == "cooperative"
        self.agent_id = uuid.uuid4().hex
        self._seq = itertools.count()
        self._identity = {
            "agent_id": self.agent_id,
            "group_id": str(client.get("group.id", "")),
            "group_instance_id": client.get("group.instance.id"),
            "client_id": str(client.get("client.id", "rdkafka")),
            "host": socket.gethostname(), "pid": os.getpid(),
            "group_protocol": self._group_protocol, "rebalance_protocol": rebalance_protocol, "assignor": assignor,
        }
        self.app_callbacks: tuple[RebalanceCallback | None, ...] = (None, None, None)
        self.closed = False
        # Inside Consumer.close() the agent asks librdkafka nothing (see _membership); events made then
        # carry the generation and member id of the last event made before.
        self.in_close = False
        # While a subscribe call's events are made, they carry the member as it was before the call
        # (``subscribing``): librdkafka may finish the join on its own thread before they are made.
        self._as_of_call = False
        self._last_seen: tuple[int, str | None] = (constant("generation_unknown"), None)
        # The assignment calls of the application's callback now running, and its thread; None outside one.
        self._calls: list[str] | None = None
        self._calls_thread = 0

    def attach(self, consumer: ConsumerView, controls: ConsumerControls) -> None:
        """Once ``Consumer.__init__`` accepted the config: the collaborators and the emitter thread.

        ``consumer`` (an ``InstrumentedConsumer``) is only ever held through a weak proxy, and seen
        through its narrow view; ``controls`` are what only the agent does to it."""
        me: Any = weakref.proxy(consumer)
        self._consumer = me
        options = self._options
        self.processed = Processed(options.processing,
                                   lambda key: self.member.committed.get(key, contract.OFFSET_UNKNOWN))
        self.member = Membership(me, self._emit, self.processed, group_protocol=self._group_protocol,
                                 cooperative=self._cooperative, options=options, config=self.client_config,
                                 config_snapshot=self._config_snapshot)
        self.revoke_committer = (RevokeCommitter(me, self.member, self.processed,
                                                 options.commit_on_revoke_timeout_ms / 1000)
                                 if options.commit_on_revoke else None)
        self.enforcer = RebalanceEnforcer(me, self.agent_id, self._group_protocol, self._cooperative,
                                          controls.resubscribe)
        # Progress switches the slow path of the consumer's poll() and consume().
        self.progress = Progress(me, self.member, self.processed, emit=self._emit, guard=self.guard,
                                 note=self.note, emit_health=self._emit_health, watch_polls=controls.watch_polls,
                                 interval_ms=options.progress_interval_ms)
        if options.producer_config is None:
            log.warning("rebalance-lens: the config names no bootstrap.servers: telemetry is off for this consumer "
                        "(set lens.telemetry.bootstrap.servers to send it to a cluster)")
        self.emitter = TelemetryEmitter(options.telemetry_topic, options.producer_config,
                                        options.buffer_max_events, key=self.agent_id,
                                        cluster_config=options.cluster_config,
                                        heartbeat=(BEAT_S, _weakly(self.progress.beat)))

    # ------------------------------------------------------------------ the consumer's calls
    def subscribing(self) -> None:
        """Before ``Consumer.subscribe``: the member's generation and id as the call found them, which
        its events carry (a loaded CI run's first joining transition carried generation 1, the join
        already done on librdkafka's thread, where the Java agent's carried -1)."""
        self.guard(self._membership)

    def subscribed(self, topics: list[str], callbacks: tuple[RebalanceCallback | None, ...]) -> None:
        """The client accepted a subscription; ``callbacks`` are the application's (assign, revoke, lost)."""
        self.app_callbacks = callbacks
        self.enforcer.settled()
        self._as_of_call = True
        try:
            self.guard(self.member.record_subscribe, list(topics))
        finally:
            self._as_of_call = False

    def committed(self, result: list[TopicPartition] | None, started: float) -> None:
        """A synchronous manual commit returned."""
        self.guard(self.member.record_commit, "manual", True, result or [], None, (_monotonic() - started) * 1000)

    def commit_failed(self, exc: KafkaException, args: tuple[Any, ...], kwargs: dict[str, Any],
                      started: float) -> None:
        """A synchronous manual commit raised ``exc`` (the host gets it unchanged)."""
        self.guard(self.member.record_commit, "manual", True, requested_offsets(args, kwargs), str(exc),
                   (_monotonic() - started) * 1000)

    def commit_sent(self) -> None:
        """An asynchronous manual commit was sent: its on_commit is a manual one."""
        self.member.pending_manual_async += 1

    def enforce(self, reason: str) -> bool:
        """``InstrumentedConsumer.enforce_rebalance``."""
        topics = self.member.subscription
        accepted = (topics is not None and not self.closed and self.member.stable
                    and self.enforcer.request(topics))
        self.guard(self._emit, "rebalance_requested",
                   contract.RebalanceRequested(reason=str(reason), mechanism=self.enforcer.mechanism,
                                               accepted=accepted))
        return accepted

    def unsubscribed(self) -> None:
        """The client dropped the subscription; the revoke (if any) comes with a later poll."""
        self.guard(self.member.start_leaving, REASONS["unsubscribe"])
        self.member.subscription = None
        if not self.member.owned:
            self.guard(self.member.left, REASONS["unsubscribe"])

    def closing(self) -> None:
        """Before ``Consumer.close()``: with commit-on-revoke, commit the processed frontier first."""
        self.guard(self.member.start_leaving, REASONS["close"])
        if self.revoke_committer is not None:
            self.guard(self.revoke_committer.commit_before_close)
        self.in_close = True

    def closed_now(self) -> None:
        """After ``Consumer.close()`` (returned or raised): the member left; a bounded final flush,
        and the emitter's thread and producer are gone when this returns."""
        self.in_close = False
        self.closed = True
        self.guard(self.member.left, REASONS["close"])
        self.guard(self._emit_health)
        self.emitter.close(CLOSE_FLUSH_TIMEOUT_S)

    # ------------------------------------------------------------------ rebalance callbacks
    def callback_call(self, name: str) -> None:
        """The consumer's ``assign``/``unassign``/``incremental_*`` is about to run: noted when the
        application's rebalance callback makes it (on the thread that runs the callback)."""
        calls = self._calls
        if (calls is not None and self._calls_thread == threading.get_ident()
                and len(calls) < contract.CALLBACK_CALLS_MAX):
            calls.append(name)

    def _watch_calls(self) -> list[str]:
        """From now until the callback returns, note its assignment calls in the list returned."""
        self._calls, self._calls_thread = [], threading.get_ident()
        return self._calls

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.enforcer.settled()
        self.guard(self.member.enter_assign)
        start = _monotonic()
        calls = self._watch_calls()
        try:
            if self.app_callbacks[0] is not None:
                self.app_callbacks[0](consumer, partitions)
        finally:
            self._calls = None
            if not self.closed:  # the application may close the consumer inside its callback: then it left
                self.guard(self.member.record_assign, partitions, (_monotonic() - start) * 1000, calls)
                self.progress.rearm()  # the assignment changed: polls may now watch for first fetches

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.enforcer.settled()
        self.guard(self.member.enter_revoke)
        self.member.in_revoke = True
        hold = (self.guard(self.revoke_committer.commit_before_handover, partitions)
                if self.revoke_committer is not None and partitions else None)
        start = _monotonic()
        calls = self._watch_calls()
        try:
            if self.app_callbacks[1] is not None:
                self.app_callbacks[1](consumer, partitions)
        finally:
            self._calls = None
            self.member.in_revoke = False
            if not self.closed:  # closed inside the callback: close() recorded the leave
                self.guard(self.member.record_release, "partitions_revoked", partitions,
                           (_monotonic() - start) * 1000, hold, calls)
                self.progress.rearm()

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.guard(self.member.enter_lost)
        start = _monotonic()
        app_callback = self.app_callbacks[2] or self.app_callbacks[1]
        calls = self._watch_calls()
        try:
            if app_callback is not None:
                app_callback(consumer, partitions)
        finally:
            self._calls = None
            self.guard(self.member.record_release, "partitions_lost", partitions,
                       (_monotonic() - start) * 1000, None, calls)
            self.progress.rearm()

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """librdkafka's offset-commit callback: asynchronous manual commits and auto commits."""
        try:
            self.member.record_async_commit(err, partitions)
        except Exception as exc:
            self.note(f"agent: on_commit: {exc!r}")
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
            self.note(f"agent: stats: {exc!r}")
        if self._app_stats_cb is not None:
            self._app_stats_cb(stats_json)

    # ------------------------------------------------------------------ emitting (never raises via guard)
    def guard(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run telemetry code; count and log (once) any failure instead of raising into the host.
        A consumer already freed (ReferenceError) is no failure: there is nothing left to report."""
        try:
            return fn(*args)
        except ReferenceError:
            return None
        except Exception as exc:
            self.note(f"agent: {fn.__name__}: {exc!r}")
            return None

    def note(self, message: str) -> None:
        emitter = getattr(self, "emitter", None)
        if emitter is not None:
            emitter.note_error(message)
        else:
            log.warning("rebalance-lens: %s", message)

    def _membership(self) -> tuple[int, str | None]:
        """The member's generation and id as the client has them; where it cannot answer, the last
        values it gave (the agent spec's envelope rule, the Java agent's too).

        Never asked while ``Consumer.close()`` runs: close serves the commit and rebalance callbacks,
        and asking the client for its group metadata from a callback served by a close() that the
        application called inside its own rebalance callback deadlocks librdkafka (the host
        blocked for good in 2 of 6 runs: tests/hardening/test_host_callbacks.py, close_in_revoke).
        After close() the client refuses (RuntimeError)."""
        if not (self.in_close or self._as_of_call):
            try:
                self._last_seen = (generation_from_metadata(self._consumer.consumer_group_metadata()),
                                   self._consumer.memberid())
            except (RuntimeError, KafkaException, ReferenceError):
                pass
        return self._last_seen

    def _emit(self, kind: str, body: contract.Body) -> None:
        """Hand one event to the emitter, with the member's generation and id (``_membership``)."""
        if not self.emitter.enabled:
            return
        generation, member_id = self._membership()
        self.emitter.offer(contract.event(
            kind, contract.to_dict(body), event_id=uuid.uuid4().hex, event_time_ms=time.time_ns() // 1_000_000,
            seq=next(self._seq), member_id=member_id, generation=generation, identity=self._identity))

    def _emit_health(self) -> None:
        """agent_health, while drops or emitter errors are unreported (at each progress tick and on close)."""
        e = self.emitter
        if e.needs_health_report():
            self._emit("agent_health", contract.AgentHealth(
                dropped_total=e.dropped_total, dropped_since_last=max(0, e.dropped_total - e.acknowledged_dropped),
                buffer_size=e.buffered, buffer_capacity=e.capacity, emitter_errors_total=e.errors_total,
                last_error=e.last_error))
