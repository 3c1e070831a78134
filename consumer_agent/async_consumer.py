"""``AsyncInstrumentedConsumer``: the instrumented consumer for applications that process in asyncio tasks.

librdkafka calls block, so every consumer call runs on one dedicated worker thread (a
consumer must not be polled from two threads at once); the event loop stays free. The
rebalance callbacks therefore run on that worker thread, inside ``poll()``/``consume()``.
That is what makes commit-on-revoke work with tasks: while the revoke callback holds the
worker thread waiting for in-flight records, the loop keeps running the tasks that finish
them and call ``mark_processed``. Processing is always explicit here.

Its lifecycle is the ``InstrumentedConsumer``'s (docs/agent-compatibility.md): it takes its
config as ``Consumer`` does and raises what the client raises; ``async with`` closes it;
``close()`` returns with the worker thread, the telemetry thread and the producer gone, and
calls after it raise the client's own error for a closed consumer; dropped without
``close()``, the consumer is freed and the worker thread ends with its executor.
"""
from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from confluent_kafka import Message

from consumer_agent.instrumented import InstrumentedConsumer
from consumer_agent.options import merged_config

T = TypeVar("T")


def _released(call: functools.partial[T]) -> Callable[[], T]:
    """``call``, let go of as it starts. The executor's worker keeps its work item a moment after
    the result is delivered; were the consumer's method in it, a host that drops the consumer in a
    reference cycle and collects at once would find it still referenced, and its threads would
    live on until some later collection (a plain ``Consumer`` is freed by that first one)."""
    held = [call]

    def run() -> T:
        return held.pop()()
    return run


class AsyncInstrumentedConsumer:
    """Awaitable ``poll``/``consume``/``commit``/``close`` over an ``InstrumentedConsumer`` in explicit mode.

    Args:
        config: as for ``InstrumentedConsumer`` (a dict, keyword arguments or both);
            ``lens.processing`` is forced to "explicit" (a record is processed when
            ``mark_processed`` is called or its ``process`` task ends).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        config = merged_config(args, kwargs)
        if config is not None:  # else the arguments go as they are, for the client to refuse
            if config.get("lens.processing", "explicit") != "explicit":
                raise ValueError('AsyncInstrumentedConsumer needs "lens.processing": "explicit" (or leave it '
                                 'unset): records finish in tasks, not on the next poll.')
            args, kwargs = ({**config, "lens.processing": "explicit"},), {}
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rebalance-lens-consumer")
        try:
            self._consumer: InstrumentedConsumer = executor.submit(InstrumentedConsumer, *args, **kwargs).result()
        except BaseException:
            executor.shutdown(wait=True)  # a refused config leaves no thread behind
            raise
        self._executor: ThreadPoolExecutor | None = executor

    async def __aenter__(self) -> AsyncInstrumentedConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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
        """Run any consumer method on the consumer's worker thread. Once closed there is no worker:
        a closed consumer answers at once (the client raises its "Consumer closed")."""
        call = functools.partial(getattr(self._consumer, method), *args, **kwargs)
        if self._executor is None:
            return call()
        return await asyncio.get_running_loop().run_in_executor(self._executor, _released(call))

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
        """Close the consumer on its worker thread, then end that thread (idle by then, or
        finishing calls queued behind the close, which a closed consumer answers at once). A
        second close does nothing, as the client's does."""
        executor = self._executor
        if executor is None:
            return self._consumer.close()
        closing = executor.submit(self._consumer.close)
        try:
            await asyncio.wrap_future(closing)
        finally:
            if closing.done() and self._executor is executor:  # not when the awaiting task was cancelled
                self._executor = None
                executor.shutdown(wait=True)
        return None
