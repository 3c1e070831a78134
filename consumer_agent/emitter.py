"""Asynchronous, bounded emission of telemetry events to Kafka through the agent's own producer.

The application thread only appends to a ``deque``; a daemon thread creates the topic if
missing, serialises and produces. When the telemetry cluster is away nothing blocks: the
buffer keeps the newest ``capacity`` events, the oldest are dropped and counted, and the
count is re-reported in ``agent_health`` events until one of them is delivered.

Nothing of the emitter outlives it: when it stops, its thread drains what it can within the deadline
(waiting in it for the topic's creation still asked of a cluster that reported no error: a consumer
closed at once keeps its telemetry, as the Java agent's does), then destroys the producer (and the
topic-creating admin client) before it exits, so ``close`` returns with librdkafka's threads of the
telemetry clients gone. Only ``close`` waits for that; ``stop`` (a consumer dropped without
``close()``) returns at once. The events carry the consumer's cluster id (``cluster_id``: a group is
named by its cluster and its group id), which the thread asks the consumer's cluster once, by
DescribeCluster from an admin client of its own (destroyed once answered): asking the host's
consumer from this thread would race its ``close()``, and nothing is asked on the application's
thread. Until the answer, or for at most ``CLUSTER_ID_WAIT_S``, events wait in the buffer; after
that they go without it (the pipelines read that as one unknown cluster), and the thread keeps
asking.

An emitter still running at interpreter exit gets ``UNCLOSED_FLUSH_TIMEOUT_S`` to drain
before the interpreter tears down. In a forked child the parent's emitter is inert: its
thread does not exist there and destroying its producer would act on the parent's
librdkafka state, so the child keeps it, untouched, until it exits.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from consumer_agent.agent_spec import constant

log = logging.getLogger("consumer_agent.telemetry")
librdkafka_log = logging.getLogger("consumer_agent.telemetry.librdkafka")


class _DebugLog:
    """librdkafka's own logs of the telemetry clients, demoted to DEBUG.

    While the telemetry cluster is away librdkafka logs a connection failure every
    reconnect backoff; the host must not see that stream. The emitter counts the errors
    and logs the first one at WARNING instead.
    """

    def log(self, _level: int, msg: str, *args: object) -> None:
        librdkafka_log.debug(msg, *args)

PRODUCER_DEFAULTS: dict[str, Any] = {
    "client.id": "rebalance-lens-agent",
    "linger.ms": 50,
    "message.timeout.ms": 60_000,
    "reconnect.backoff.max.ms": 2_000,
}
TOPIC_RETRY_S = 2.0
# What a consumer dropped without close(), or still open at interpreter exit, gets to drain.
UNCLOSED_FLUSH_TIMEOUT_S = 1.0
# How long close() waits, past the drain, for librdkafka to destroy the telemetry clients.
DESTROY_TIMEOUT_S = 2.0
ADMIN_TIMEOUT_S = 5.0
# How long events wait for the consumer's cluster id before they go without it.
CLUSTER_ID_WAIT_S: float = constant("cluster_id_wait_ms") / 1000
# Producer-only settings an AdminClient must not receive.
_PRODUCER_ONLY = ("linger.ms", "message.timeout.ms", "acks", "compression.type", "batch.size", "enable.idempotence",
                  "queue.buffering.max.messages", "queue.buffering.max.kbytes", "retries", "delivery.timeout.ms")


_RUNNING: weakref.WeakSet[TelemetryEmitter] = weakref.WeakSet()
_FORKED_AWAY: list[Any] = []  # a forked child's inherited producers: never destroyed there


class TelemetryEmitter:
    """Owns the buffer, the emitter thread, the producer and the drop/error counters."""

    def __init__(self, topic: str, producer_config: dict[str, Any] | None, capacity: int, key: str,
                 heartbeat: tuple[float, Callable[[], None]] | None = None,
                 cluster_config: dict[str, Any] | None = None) -> None:
        """``heartbeat``: (interval_s, fn) called on the emitter thread every interval (the progress timer).
        ``cluster_config``: how to reach the consumer's cluster, to ask its id (None: events carry none).

        ``producer_config`` None: telemetry is off (nowhere to send it): no producer, no
        thread; offered events are discarded.
        """
        self.topic = topic
        self._heartbeat = heartbeat
        self._next_beat = time.monotonic() + heartbeat[0] if heartbeat else float("inf")
        self.capacity = capacity
        self._key = key.encode()
        self._buffer: deque[dict[str, Any]] = deque(maxlen=capacity)
        self._counters = threading.Lock()
        self.dropped_total = 0
        self.errors_total = 0
        self.last_error: str | None = None
        self.acknowledged_dropped = 0   # dropped_total carried by the last delivered agent_health event
        self.acknowledged_errors = 0
        self._logged = False
        self._pid = os.getpid()
        self._stop_deadline = 0.0
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._producer: Producer | None = None
        self._admin: AdminClient | None = None
        self._topic_future: Any = None
        self.cluster_id: str | None = None
        self._cluster_config = cluster_config
        self._cluster_admin: AdminClient | None = None
        self._cluster_future: Any = None
        self._next_cluster_attempt = 0.0
        self._cluster_wait_until = time.monotonic() + CLUSTER_ID_WAIT_S
        if producer_config is None:
            return
        config = {**PRODUCER_DEFAULTS, **producer_config, "logger": _DebugLog()}
        config["queue.buffering.max.messages"] = min(int(config.get("queue.buffering.max.messages", capacity)),
                                                     capacity)
        self._producer = Producer({**config, "error_cb": self._on_client_error})
        self._admin_config = {k: v for k, v in config.items() if k not in _PRODUCER_ONLY}
        self._topic_ready = False
        self._next_topic_attempt = 0.0
        self._thread = threading.Thread(target=self._run, name="rebalance-lens-emitter", daemon=True)
        self._thread.start()
        _RUNNING.add(self)

    # -- application side ---------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """False when telemetry is off: there is no cluster to send it to."""
        return self._thread is not None

    def offer(self, event: dict[str, Any]) -> None:
        """Queue one event; never blocks, drops the oldest when full. Discarded once stopped or when off."""
        if self._thread is None or self._stopping.is_set():
            return
        with self._counters:
            if len(self._buffer) >= self.capacity:
                self.dropped_total += 1
            self._buffer.append(event)
        self._wake.set()

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def needs_health_report(self) -> bool:
        """True while drops or errors exist that no delivered agent_health event has reported."""
        return self.dropped_total > self.acknowledged_dropped or self.errors_total > self.acknowledged_errors

    def stop(self, timeout_s: float) -> None:
        """Ask the thread to drain what it can within ``timeout_s``, destroy the producer and end;
        returns at once. Later calls keep the earliest deadline."""
        if self._thread is None:
            return
        if os.getpid() != self._pid:  # a forked child: the thread and the clients are the parent's
            _FORKED_AWAY.append((self._producer, self._admin, self._cluster_admin))
            return
        deadline = time.monotonic() + timeout_s
        if not self._stopping.is_set() or deadline < self._stop_deadline:
            self._stop_deadline = deadline
        self._stopping.set()
        self._wake.set()

    def close(self, timeout_s: float) -> None:
        """``stop``, and wait until the thread and the producer's threads are gone (at most
        ``timeout_s`` plus the producer's destruction)."""
        self.stop(timeout_s)
        thread = self._thread
        if thread is not None and os.getpid() == self._pid and thread is not threading.current_thread():
            thread.join(timeout_s + DESTROY_TIMEOUT_S)

    # -- emitter thread -----------------------------------------------------------------------
    def note_error(self, message: str) -> None:
        """Count a telemetry failure (any thread); only the first is logged: the host's log is not ours to fill."""
        with self._counters:
            self.errors_total += 1
            self.last_error = message[:500]
        if not self._logged:
            self._logged = True
            log.warning("rebalance-lens telemetry: %s (further errors are counted, not logged)", message)

    def _on_client_error(self, err: KafkaError) -> None:
        self.note_error(f"producer: {err}")

    def _ensure_topic(self) -> None:
        """Create the topic if missing, without blocking the emitter loop (its timer must keep ticking)."""
        if self._topic_future is None:
            if time.monotonic() < self._next_topic_attempt:
                return
            self._admin = AdminClient(self._admin_config)  # keep a reference: its futures die with it
            self._topic_future = self._admin.create_topics([NewTopic(self.topic)],
                                                           request_timeout=ADMIN_TIMEOUT_S)[self.topic]
            return
        if not self._topic_future.done():
            return
        future, self._topic_future, self._admin = self._topic_future, None, None
        self._next_topic_attempt = time.monotonic() + TOPIC_RETRY_S
        try:
            future.result()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if not (isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS):
                self.note_error(f"creating topic {self.topic}: {exc}")
                return
        except Exception as exc:  # anything else: retry later, never raise
            self.note_error(f"creating topic {self.topic}: {exc!r}")
            return
        self._topic_ready = True

    def _learn_cluster_id(self) -> None:
        """Ask the consumer's cluster its id, without blocking the emitter loop; after a failure,
        ask again later. ``_cluster_config`` None once answered. A failure is logged at DEBUG only,
        not counted as an emitter error: the consumer's own cluster being away is the host's to
        see (its client errors, in its own log and in client_error events), and the events that
        go without the id say it in the data."""
        if self._cluster_future is None:
            if time.monotonic() < self._next_cluster_attempt:
                return
            self._cluster_admin = AdminClient({**self._cluster_config, "client.id": PRODUCER_DEFAULTS["client.id"],
                                               "logger": _DebugLog()})
            self._cluster_future = self._cluster_admin.describe_cluster(request_timeout=ADMIN_TIMEOUT_S)
            return
        if not self._cluster_future.done():
            return
        future, self._cluster_future, self._cluster_admin = self._cluster_future, None, None
        self._next_cluster_attempt = time.monotonic() + TOPIC_RETRY_S
        try:
            self.cluster_id = future.result().cluster_id
        except Exception as exc:  # anything: ask again later, never raise
            log.debug("rebalance-lens telemetry: asking the consumer's cluster id: %r", exc)
            return
        self._cluster_config = None  # answered (a cluster without an id, before Kafka 0.10.1: none to wait for)

    def _may_send(self) -> bool:
        """Events go once the cluster id is known, or not to be waited for any longer."""
        return (self._cluster_config is None or self._stopping.is_set()
                or time.monotonic() >= self._cluster_wait_until)

    def _delivered(self, health_dropped: int | None, health_errors: int | None):
        def callback(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                with self._counters:
                    self.dropped_total += 1
                self.note_error(f"delivery: {err}")
            elif health_dropped is not None:
                self.acknowledged_dropped = max(self.acknowledged_dropped, health_dropped)
                self.acknowledged_errors = max(self.acknowledged_errors, health_errors or 0)
        return callback

    def _drain(self) -> None:
        while self._buffer:
            with self._counters:
                event = self._buffer.popleft()
            if self.cluster_id is not None:
                event["cluster_id"] = self.cluster_id
            body = event["body"]
            health = event["kind"] == "agent_health"
            try:
                self._producer.produce(self.topic, key=self._key, value=json.dumps(event, separators=(",", ":")),
                                       on_delivery=self._delivered(body["dropped_total"] if health else None,
                                                                   body["emitter_errors_total"] if health else None))
            except BufferError:  # producer queue full: keep the event unless the buffer refilled meanwhile
                with self._counters:
                    if len(self._buffer) < self.capacity:
                        self._buffer.appendleft(event)
                    else:
                        self.dropped_total += 1
                return
            except Exception as exc:
                with self._counters:
                    self.dropped_total += 1
                self.note_error(f"produce: {exc!r}")

    def _topic_coming(self) -> bool:
        """The topic is ready, or its creation is still asked of a telemetry cluster that reported no error:
        worth waiting for within the stop deadline, so a consumer closed at once keeps its telemetry (as
        the Java agent's does). A cluster that refuses (an error came) is not waited for: close() stays as
        fast as the plain client's."""
        return self._topic_ready or (self._topic_future is not None and self.errors_total == 0)

    def _run(self) -> None:
        while True:
            self._wake.wait(0.1)
            self._wake.clear()
            try:
                if not self._topic_ready:
                    self._ensure_topic()
                if self._cluster_config is not None and not self._stopping.is_set():
                    self._learn_cluster_id()
                if self._topic_ready and self._may_send():
                    self._drain()
                self._producer.poll(0)
                if self._heartbeat and not self._stopping.is_set() and time.monotonic() >= self._next_beat:
                    self._next_beat = time.monotonic() + self._heartbeat[0]
                    self._heartbeat[1]()
            except Exception as exc:  # the emitter must survive anything
                self.note_error(f"emitter: {exc!r}")
            if self._stopping.is_set() and (not self._buffer or time.monotonic() >= self._stop_deadline
                                            or not self._topic_coming()):
                break
        try:
            self._producer.flush(max(0.0, self._stop_deadline - time.monotonic()))
            self._producer.purge()   # what the deadline left undelivered: reported as drops
            self._producer.poll(0)
        except Exception as exc:
            self.note_error(f"emitter: {exc!r}")
        finally:
            # The last references: librdkafka destroys the clients here and joins their threads.
            self._producer = self._admin = self._topic_future = self._cluster_admin = self._cluster_future = None
            _RUNNING.discard(self)


@atexit.register
def _stop_at_exit() -> None:
    """Emitters of consumers still open at exit drain briefly and end before the interpreter
    tears down (a daemon thread inside librdkafka then would be cut off mid-call). All drain at
    once: the exit waits one drain, not one per consumer."""
    emitters = list(_RUNNING)
    for emitter in emitters:
        emitter.stop(UNCLOSED_FLUSH_TIMEOUT_S)
    for emitter in emitters:
        emitter.close(UNCLOSED_FLUSH_TIMEOUT_S)
