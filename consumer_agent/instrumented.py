"""``InstrumentedConsumer``: a drop-in ``confluent_kafka.Consumer`` that reports what rebalances cost.

Outline:
- It subclasses ``Consumer``, so every method and ``isinstance`` checks behave as before;
  only ``subscribe``, ``poll``, ``consume``, ``commit``, ``unsubscribe``, ``close`` and
  ``__exit__`` are wrapped, plus the ``on_commit`` and ``stats_cb`` callbacks (chained to the
  application's), and the four assignment calls, which pass straight on after noting a call
  the application's rebalance callback makes (KIP-848 fails ``assign``/``unassign`` there).
  What it records lives in its ``Agent`` (``consumer_agent.agent``).
- A drop-in down to the idioms (docs/agent-compatibility.md, tested against the plain client
  by tests/agent/test_drop_in.py): it takes its config as ``Consumer`` does (a dict, keyword
  arguments or both); arguments or a config the client refuses reach the client, which raises
  its own exception; ``with`` closes through ``close()``; a consumer dropped without ``close()``
  is freed at once (the agent holds it weakly) and its group sees it go as it would see a
  plain one; ``close()`` returns with the telemetry thread and producer gone; a consumer whose
  subclass skipped ``__init__`` behaves as such a plain one does. Every wrapper passes
  straight to the client when there is no agent (``__init__`` skipped) or it is closed.
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
"""
from __future__ import annotations

import time
import weakref
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from consumer_agent.agent import Agent, RebalanceCallback
from consumer_agent.consumer_view import ConsumerControls
from consumer_agent.emitter import UNCLOSED_FLUSH_TIMEOUT_S
from consumer_agent.options import is_agent_option, merged_config, split_config

_monotonic = time.monotonic
_base_poll = Consumer.poll
_base_consume = Consumer.consume
_NOT_GIVEN: Any = object()  # a callback not passed at all (the client refuses an explicit None)
_CALLBACK_NAMES = ("on_assign", "on_revoke", "on_lost")


def _asynchronous(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``commit(*args, **kwargs)`` is asynchronous, read as the client reads it
    (third positional, ``async`` or ``asynchronous``; the last named wins; default True)."""
    flag = args[2] if len(args) > 2 else True
    for key in ("async", "asynchronous"):
        flag = kwargs.get(key, flag)
    return bool(flag)


def _noted(name: str) -> Any:
    """``Consumer.<name>`` (an assignment call), first noted by the agent when the application's
    rebalance callback makes it; the arguments, result and errors are the client's."""
    base = getattr(Consumer, name)

    def call(self: InstrumentedConsumer, *args: Any, **kwargs: Any) -> Any:
        self._note_call(name)
        return base(self, *args, **kwargs)

    call.__name__, call.__qualname__ = name, f"InstrumentedConsumer.{name}"
    call.__doc__ = f"``Consumer.{name}``; noted when the application's rebalance callback calls it."
    return call


def _controls(consumer: InstrumentedConsumer) -> ConsumerControls:
    """What only the agent does to ``consumer``, through a weak proxy (the agent must not keep it alive)."""
    me: Any = weakref.proxy(consumer)

    def watch_polls(on: bool) -> None:
        me._hook = on

    def resubscribe(topics: list[str]) -> None:
        me._subscribe_wrapped(topics)
    return ConsumerControls(watch_polls=watch_polls, resubscribe=resubscribe)


class InstrumentedConsumer(Consumer):
    """A ``confluent_kafka.Consumer`` that emits rebalance telemetry (schema v1) to a Kafka topic.

    Takes its configuration as ``Consumer`` does: ``InstrumentedConsumer(config)``,
    ``InstrumentedConsumer(**config)`` or both (keyword arguments win).

    Args:
        config: any ``Consumer`` configuration plus the agent's ``lens.*`` options, which are
            removed before librdkafka sees the config:
            ``lens.telemetry.topic`` (required), ``lens.telemetry.<producer setting>`` (the
            telemetry producer; defaults to the consumer's bootstrap and security settings;
            with no ``bootstrap.servers`` anywhere telemetry is off, logged once),
            ``lens.commit.on.revoke`` (False), ``lens.commit.on.revoke.timeout.ms`` (30000),
            ``lens.processing`` ("on_next_poll", "explicit" or "committed"), ``lens.progress.interval.ms``
            (5000), ``lens.buffer.max.events`` (10000).

    Raises:
        Whatever ``Consumer`` raises for these arguments, unchanged; else
        ValueError: an agent option is missing, unknown or malformed.
    """

    _agent: Agent | None = None  # None: __init__ never ran (a subclass skipped it): the plain client
    _hook = False                # poll()/consume() take the slow path (switched by the agent: _controls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        config = merged_config(args, kwargs)
        if config is None:  # arguments the client refuses: it raises, in its own words
            super().__init__(*args, **kwargs)
            return
        try:
            options, consumer_config = split_config(config)
        except ValueError as refused:
            error = refused
        else:
            error = None
        if error is not None:
            self._client_judges_first(config)
            raise error
        agent = Agent(options, consumer_config)
        super().__init__(agent.client_config)  # raises as the client does (already initialised, ...)
        agent.attach(self, _controls(self))
        self._agent = agent
        # Dropped without close(): what is buffered gets a short drain, no wait. Only the emitter:
        # a finalizer's callable must not lead back to the consumer. (At exit the emitter module stops it.)
        weakref.finalize(self, agent.emitter.stop, UNCLOSED_FLUSH_TIMEOUT_S).atexit = False

    def _client_judges_first(self, config: dict[str, Any]) -> None:
        """The agent refuses its options: when the client refuses the rest of the config too, its
        error is the one a drop-in raises. A client it accepted is closed at once, never used."""
        super().__init__({k: v for k, v in config.items() if not is_agent_option(k)})
        super().close()

    # ------------------------------------------------------------------ public API
    @property
    def agent_id(self) -> str:
        """This agent instance's id: the key of its telemetry records and the scope of ``seq``."""
        return self._attached().agent_id

    def telemetry_stats(self) -> dict[str, int]:
        """Telemetry events dropped (buffer full or undeliverable), buffered now, and emitter errors."""
        emitter = self._attached().emitter
        return {"dropped": emitter.dropped_total, "buffered": emitter.buffered, "errors": emitter.errors_total}

    def subscribe(self, topics: list[str], on_assign: RebalanceCallback = _NOT_GIVEN,
                  on_revoke: RebalanceCallback = _NOT_GIVEN, on_lost: RebalanceCallback = _NOT_GIVEN) -> None:
        """``Consumer.subscribe``; the application's callbacks are called with identical semantics.

        Lost partitions go to ``on_lost`` when given, else to ``on_revoke``, as in confluent-kafka.
        """
        given = {name: cb for name, cb in zip(_CALLBACK_NAMES, (on_assign, on_revoke, on_lost))
                 if cb is not _NOT_GIVEN}
        agent = self._agent
        if agent is None or agent.closed or not all(callable(cb) for cb in given.values()):
            return super().subscribe(topics, **given)  # the client's own result or error
        agent.subscribing()
        self._subscribe_wrapped(topics)
        agent.subscribed(topics, tuple(given.get(name) for name in _CALLBACK_NAMES))
        return None

    def poll(self, timeout: float = -1) -> Message | None:
        """``Consumer.poll``; the hot path adds one attribute check."""
        msg = _base_poll(self, timeout)
        if self._hook:
            self._agent.progress.hooked([msg] if msg is not None else ())
        return msg

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """``Consumer.consume``; the hot path adds one attribute check per batch."""
        msgs = _base_consume(self, num_messages, timeout)
        if self._hook:
            self._agent.progress.hooked(msgs)
        return msgs

    def commit(self, *args: Any, **kwargs: Any) -> list[TopicPartition] | None:
        """``Consumer.commit``; synchronous results are recorded here, asynchronous ones via on_commit."""
        agent = self._agent
        if agent is None or agent.closed:
            return super().commit(*args, **kwargs)
        if _asynchronous(args, kwargs):
            result = super().commit(*args, **kwargs)
            agent.commit_sent()
            return result
        start = _monotonic()
        try:
            result = super().commit(*args, **kwargs)
        except KafkaException as exc:
            agent.commit_failed(exc, args, kwargs, start)
            raise
        agent.committed(result, start)
        return result

    def mark_processed(self, msg: Message) -> None:
        """Explicit mode: ``msg`` is processed; its offset may be committed and it is no longer in flight.

        Thread-safe (call it from worker threads or asyncio tasks). In the default
        ``on_next_poll`` mode the next poll already counts the record, so this does nothing.
        """
        self._attached().processed.mark(msg)

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
            subscribed (or not initialised), a rebalance is in progress, or the previous
            accepted call has not yet shown a rebalance (no callback and the same generation)
            within ``ENFORCE_SETTLE_S``.
        """
        agent = self._agent
        return agent.enforce(reason) if agent is not None else False

    assign = _noted("assign")
    unassign = _noted("unassign")
    incremental_assign = _noted("incremental_assign")
    incremental_unassign = _noted("incremental_unassign")

    def unsubscribe(self, *args: Any, **kwargs: Any) -> None:
        """``Consumer.unsubscribe``; recorded once the client accepted it."""
        super().unsubscribe(*args, **kwargs)
        agent = self._agent
        if agent is not None and not agent.closed:
            agent.unsubscribed()

    def close(self, *args: Any, **kwargs: Any) -> None:
        """``Consumer.close``, then a bounded flush of the telemetry (at most 5 s); when it returns,
        the telemetry thread and producer are gone.

        With commit-on-revoke the processed frontier is committed first (``commit_before_close``).
        """
        agent = self._agent
        if agent is None or agent.closed or args or kwargs:
            return super().close(*args, **kwargs)  # nothing of the agent's left to do, or the client's error
        agent.closing()
        try:
            super().close()
        finally:
            agent.closed_now()
        return None

    def __exit__(self, *args: Any) -> None:
        """``with InstrumentedConsumer(...) as c:`` closes through ``close()``, as the client's
        ``__exit__`` closes through its own."""
        if len(args) != 3:
            return super().__exit__(*args)  # the client's own TypeError
        self.close()
        return None

    # ------------------------------------------------------------------ internals
    def _attached(self) -> Agent:
        """The agent; a consumer whose ``__init__`` never ran raises as the client does for it."""
        if self._agent is None:
            raise RuntimeError("Consumer closed")
        return self._agent

    def _note_call(self, name: str) -> None:
        """Before an assignment call: the agent notes it if a rebalance callback of the
        application's is running on this thread (never raises; the call then goes on unchanged)."""
        agent = self._agent
        if agent is not None:
            agent.callback_call(name)

    def _subscribe_wrapped(self, topics: list[str]) -> None:
        """``Consumer.subscribe`` with the agent's rebalance callbacks (which call the application's)."""
        agent = self._agent
        super().subscribe(topics, on_assign=agent.on_assign, on_revoke=agent.on_revoke, on_lost=agent.on_lost)
