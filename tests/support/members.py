"""Group members for integration tests: an InstrumentedConsumer polled on its own thread.

Every call on the consumer happens on the member's thread (requests are queued to it), as
in a real application; the records it processed are kept by value so duplicates can be
counted exactly.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import Message

from consumer_agent import InstrumentedConsumer

PROTOCOLS: dict[str, dict[str, Any]] = {
    "range": {"partition.assignment.strategy": "range", "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
    "roundrobin": {"partition.assignment.strategy": "roundrobin", "session.timeout.ms": 6000,
                   "heartbeat.interval.ms": 1000},
    "cooperative-sticky": {"partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 6000,
                           "heartbeat.interval.ms": 1000},
    "consumer": {"group.protocol": "consumer"},
}
EAGER = {"range", "roundrobin"}


class Member:
    """One consumer on a thread. ``commit_every``: commit synchronously after every N records.

    ``workers``: process each record on a thread pool (explicit mode), sleeping ``work_s``,
    then ``mark_processed``.
    """

    def __init__(self, config: dict[str, Any], topic: str, commit_every: int = 0, workers: int = 0,
                 work_s: float = 0.0) -> None:
        self.consumer = InstrumentedConsumer(config)
        self.topic = topic
        self.seen: list[str] = []
        self._lock = threading.Lock()
        self._commit_every = commit_every
        self._pool = ThreadPoolExecutor(workers) if workers else None
        self._work_s = work_s
        self._calls: queue.Queue[tuple[Callable[[InstrumentedConsumer], Any], queue.Queue]] = queue.Queue()
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def agent_id(self) -> str:
        return self.consumer.agent_id

    def call(self, fn: Callable[[InstrumentedConsumer], Any], timeout: float = 30) -> Any:
        """Run ``fn(consumer)`` on the member's thread and return its result."""
        reply: queue.Queue = queue.Queue()
        self._calls.put((fn, reply))
        ok, value = reply.get(timeout=timeout)
        if not ok:
            raise value
        return value

    def count(self) -> int:
        with self._lock:
            return len(self.seen)

    def _process(self, msg: Message) -> None:
        if self._work_s:
            time.sleep(self._work_s)
        with self._lock:
            self.seen.append(msg.value().decode())
        if self._pool is not None:
            self.consumer.mark_processed(msg)

    def _run(self) -> None:
        try:
            self.consumer.subscribe([self.topic])
            while not self._stop.is_set():
                while not self._calls.empty():
                    fn, reply = self._calls.get()
                    try:
                        reply.put((True, fn(self.consumer)))
                    except BaseException as exc:  # handed back to the caller
                        reply.put((False, exc))
                msg = self.consumer.poll(0.05)
                if msg is None or msg.error():
                    continue
                if self._pool is not None:
                    self._pool.submit(self._process, msg)
                    continue
                self._process(msg)
                if self._commit_every and self.count() % self._commit_every == 0:
                    self.consumer.commit(asynchronous=False)
        except BaseException as exc:
            self.error = exc
        finally:
            self.consumer.close()
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), "member thread did not stop"
        if self.error is not None:
            raise self.error


def wait_until(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def duplicates(*members: Member) -> int:
    """Records processed more than once across ``members``, counted by record value."""
    counts = Counter(v for m in members for v in list(m.seen))
    return sum(n - 1 for n in counts.values())


def settle(members: list[Member], ids: set[str], quiet_s: float = 2.0, timeout: float = 40) -> None:
    """Wait until every id was processed and no member processed anything for ``quiet_s``."""
    wait_until(lambda: ids <= {v for m in members for v in list(m.seen)}, timeout, "every record processed")
    last, since = -1, time.monotonic()
    while time.monotonic() - since < quiet_s:
        total = sum(m.count() for m in members)
        if total != last:
            last, since = total, time.monotonic()
        time.sleep(0.1)
