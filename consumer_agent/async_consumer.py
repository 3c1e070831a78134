"""``AsyncInstrumentedConsumer``: the instrumented consumer for applications that process in asyncio tasks.

librdkafka calls block, so every consumer call runs on one dedicated worker thread (a
consumer must not be polled from two threads at once); the event loop stays free. The
rebalance callbacks therefore run on that worker thread, inside ``poll()``/``consume()``.
That is what makes commit-on-revoke work with tasks: while the revoke callback holds the
worker thread waiting for in-flight records, the loop keeps running the tasks that finish
them and call ``mark_processed``. Processing is always explicit here.
"""
from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from confluent_kafka import Message

from consumer_agent.instrumented import InstrumentedConsumer

T = TypeVar("T")


class AsyncInstrumentedConsumer:
    """Awaitable ``poll``/``consume``/``commit``/``close`` over an ``InstrumentedConsumer`` in explicit mode.

    Args:
        config: as for ``InstrumentedConsumer``; ``lens.processing`` is forced to "explicit"
            (a record is processed when ``mark_processed`` is called or its ``process`` task ends).
    """

    def __init__(self, config: dict[str, Any]) -> None:
        if config.get("lens.processing", "explicit") != "explicit":
            raise ValueError('AsyncInstrumentedConsumer needs "lens.processing": "explicit" (or leave it unset): '
                             "records finish in tasks, not on the next poll.")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rebalance-lens-consumer")
        self._consumer: InstrumentedConsumer = self._executor.submit(
            InstrumentedConsumer, {**config, "lens.processing": "explicit"}).result()

    @property
    def consumer(self) -> InstrumentedConsumer:
        """The underlying consumer (call its blocking methods only through ``run``)."""
        return self._consumer

    @property
    def agent_id(self) -> str:
        return self._consumer.agent_id

    def telemetry_stats(self) -> dict[str, int]:
        return self._consumer.telemetry_stats()

    async def run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run any consumer method on the consumer's worker thread."""
        call = functools.partial(getattr(self._consumer, method), *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    async def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        """Subscribe; the callbacks run on the consumer's worker thread, inside poll/consume/close."""
        await self.run("subscribe", topics, **callbacks)

    async def poll(self, timeout: float = -1) -> Message | None:
        return await self.run("poll", timeout)

    async def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        return await self.run("consume", num_messages, timeout)

    async def commit(self, *args: Any, **kwargs: Any) -> Any:
        return await self.run("commit", *args, **kwargs)

    def mark_processed(self, msg: Message) -> None:
        """Thread-safe; may be called from the loop or any thread."""
        self._consumer.mark_processed(msg)

    def process(self, msg: Message, work: Awaitable[T]) -> asyncio.Task[T]:
        """Run ``work`` as a task that marks ``msg`` processed when it succeeds."""
        async def tracked() -> T:
            result = await work
            self._consumer.mark_processed(msg)
            return result
        return asyncio.get_running_loop().create_task(tracked())

    async def enforce_rebalance(self, reason: str) -> bool:
        return await self.run("enforce_rebalance", reason)

    async def close(self) -> None:
        try:
            await self.run("close")
        finally:
            self._executor.shutdown(wait=False)
