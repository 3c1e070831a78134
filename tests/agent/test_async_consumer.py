"""``AsyncInstrumentedConsumer`` dropped in a reference cycle right after a call is freed by the
host's first collection, as a plain ``Consumer`` is (tests/agent/test_drop_in.py plays the same
program against a broker, where the race below is a matter of timing; here it is forced)."""
from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref
from concurrent.futures import thread as executor_thread
from typing import Any

from consumer_agent import AsyncInstrumentedConsumer

WORKER_LINGERS_S = 0.5   # how long the worker keeps its finished work item (a busy machine's delay, widened)


class Host:
    """An application object that holds its consumer and gives it its own bound method."""

    def __init__(self) -> None:
        self.consumer = AsyncInstrumentedConsumer(  # broker-less: telemetry off
            {"group.id": "async-release", "lens.telemetry.topic": "async-release-telemetry"})

    def on_assign(self, *_: Any) -> None:
        pass


def test_a_consumer_dropped_in_a_cycle_while_its_worker_lingers_is_freed_by_one_collection(monkeypatch):
    finish = executor_thread._WorkItem.run

    def lingering(item: executor_thread._WorkItem) -> None:
        finish(item)
        time.sleep(WORKER_LINGERS_S)   # the result is out; the work item is still held
    monkeypatch.setattr(executor_thread._WorkItem, "run", lingering)

    async def play() -> weakref.ref:
        host = Host()
        await host.consumer.subscribe(["async-release"], on_assign=host.on_assign)
        assert await host.consumer.poll(0.01) is None
        consumer = weakref.ref(host.consumer.consumer)
        del host
        gc.collect()
        return consumer

    consumer = asyncio.run(play())
    assert consumer() is None
    deadline = time.monotonic() + 2 * WORKER_LINGERS_S + 2.0
    while workers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not workers()


def workers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("rebalance-lens-consumer")]
