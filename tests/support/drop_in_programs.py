"""Programs a host writes against ``confluent_kafka.Consumer``, played by a plain ``Consumer``, an
``InstrumentedConsumer`` or an ``AsyncInstrumentedConsumer``; each child prints its transcript.

tests/agent/test_drop_in.py plays every program with every kind at once, in child processes
(tests/support/child_play.py), and compares each transcript with the plain client's, the
oracle. A line is one of:
- ``[what, ...]``: what the host sees (results, exceptions with their messages, records,
  threads left behind, how fast the group sees the member go): compared line for line;
- ``["differs", what, ...]``: a known, documented difference (docs/agent-compatibility.md):
  the test checks each kind's value against the table instead;
- ``["measure", name, value]``: a figure for the report, never compared;
- ``["agent", name, value]``: what only an instrumented consumer has (its agent id, the log
  lines of its agent), checked by the test.

The async kind runs the same programs through ``Awaited``, which awaits every call on an
event loop of the program's thread; ``with`` is ``async with`` there.

Run as ``python -m tests.support.drop_in_programs KIND BOOTSTRAP TOPIC TELEMETRY_TOPIC PROGRAM``.
"""
from __future__ import annotations

import asyncio
import copy
import gc
import inspect
import json
import logging
import os
import pickle
import re
import resource
import signal
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from consumer_agent import AsyncInstrumentedConsumer, InstrumentedConsumer

PER_PARTITION = 20      # records in each of the topic's 2 partitions
SESSION_S = 6.0
SETTINGS = {"session.timeout.ms": int(SESSION_S * 1000), "heartbeat.interval.ms": 1000,
            "auto.offset.reset": "earliest", "partition.assignment.strategy": "range"}
LEFT_WITHIN_S = 3.0     # a member that leaves the group is taken over within this (a heartbeat and a join)
THREADS_SETTLE_S = 2.0  # how long a program waits for the threads of a consumer it let go to end


# ---------------------------------------------------------------------------------------- output
def say(*line: Any) -> None:
    print(json.dumps(line, default=str), flush=True)


def normalized(text: str) -> str:
    """A message with the class's own name and object addresses taken out: the class is another
    one by design (``InstrumentedConsumer`` is a subclass); everything else must be equal."""
    named = r"[\w.]*\b(?:InstrumentedConsumer|Consumer)"
    text = re.sub(rf"{named}(?=\.\w+\(\))|(?<=[<']){named}(?=[' ])", "<class>", text)
    return re.sub(r"0x[0-9a-f]+", "0x…", text)


def outcome(call: Callable[[], Any]) -> list:
    """What a call gave the host: its result, summarised, or its exception and message."""
    try:
        return ["returned", summary(call())]
    except Exception as exc:  # noqa: BLE001 - the exception is the transcript
        return ["raised", type(exc).__name__, normalized(str(exc))]


def summary(value: Any) -> Any:
    """A result in words that do not change from run to run."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, TopicPartition):
        return ["TopicPartition", value.partition, value.offset, None if value.error is None else str(value.error)]
    if isinstance(value, (list, tuple)):
        return [summary(v) for v in value]
    if hasattr(value, "topics") and hasattr(value, "brokers"):  # ClusterMetadata
        return ["ClusterMetadata", {name: len(t.partitions) for name, t in value.topics.items()}]
    if type(value).__name__ == "Message":
        return ["Message", value.partition(), value.offset()]
    return type(value).__name__


# ---------------------------------------------------------------------------------------- threads
def tids() -> set[int]:
    """This process's OS threads (librdkafka's are not in threading.enumerate())."""
    return {int(t) for t in os.listdir("/proc/self/task")}


def threads_left(before: set[int], what: str) -> None:
    """Threads started since ``before`` still running, once they had ``THREADS_SETTLE_S`` to end."""
    start = time.monotonic()
    while tids() - before and time.monotonic() - start < THREADS_SETTLE_S:
        time.sleep(0.01)
    say("threads left", what, len(tids() - before))
    say("measure", f"threads ended {what} after s", round(time.monotonic() - start, 3))


# ---------------------------------------------------------------------------------------- kinds
_LOOP = asyncio.new_event_loop()


class Awaited:
    """An ``AsyncInstrumentedConsumer`` driven by synchronous program code: every call is awaited
    on this thread's event loop (methods it lacks go through its ``run``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._consumer = AsyncInstrumentedConsumer(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        consumer = self._consumer
        method = getattr(consumer, name, None)
        if method is None:
            return lambda *args, **kwargs: _LOOP.run_until_complete(consumer.run(name, *args, **kwargs))
        if inspect.iscoroutinefunction(method):
            return lambda *args, **kwargs: _LOOP.run_until_complete(method(*args, **kwargs))
        return method

    def __enter__(self) -> Awaited:
        _LOOP.run_until_complete(self._consumer.__aenter__())
        return self

    def __exit__(self, *exc: object) -> None:
        _LOOP.run_until_complete(self._consumer.__aexit__(*exc))


class Kind:
    """How a program builds its consumer: the plain client, or an agent (its ``lens.*`` topic added
    to the config, wherever the program puts the config)."""

    def __init__(self, name: str, telemetry: str) -> None:
        self.name = name
        self.cls: Any = {"plain": Consumer, "instrumented": InstrumentedConsumer, "async": Awaited}[name]
        self.lens = {} if name == "plain" else {"lens.telemetry.topic": telemetry}
        self.log: list[str] = []

    def args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if args and isinstance(args[0], dict):
            return ({**args[0], **self.lens}, *args[1:]), kwargs
        if not args:
            return args, {**kwargs, **self.lens}
        return args, kwargs

    def make(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = self.args(args, kwargs)
        return self.cls(*args, **kwargs)

    def facts(self, consumer: Any) -> None:
        if self.name != "plain":
            say("agent", "agent_id", consumer.agent_id)


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(f"{record.levelname} {record.getMessage()}")


# ---------------------------------------------------------------------------------------- a group
def config(bootstrap: str, **overrides: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "group.id": f"drop-in-{uuid.uuid4().hex[:8]}", **SETTINGS, **overrides}


def read(consumer: Any, records: int, limit_s: float = 30) -> int:
    """Poll until ``records`` records came (at most ``limit_s``); how many came."""
    got, deadline = 0, time.monotonic() + limit_s
    while got < records and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        got += msg is not None and not msg.error()
    return got


class Survivor:
    """A plain member of the subject's group: it shares the topic with the subject, and takes
    the subject's partition over when the subject goes."""

    def __init__(self, conf: dict[str, Any], topic: str) -> None:
        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not self.consumer.assignment() and time.monotonic() < deadline:
            self.consumer.poll(0.1)

    def share_with(self, subject: Any) -> None:
        """Poll both until each owns one partition and the subject has had a record."""
        got, deadline = 0, time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = subject.poll(0.1)
            got += msg is not None and not msg.error()
            self.consumer.poll(0.1)
            if got and len(subject.assignment()) == 1 and len(self.consumer.assignment()) == 1:
                break
        say("shared the partitions", len(subject.assignment()), len(self.consumer.assignment()), got > 0)

    def takeover(self) -> None:
        """How fast the group saw the subject go: left the group (at once), or its session timed out."""
        start = time.monotonic()
        while len(self.consumer.assignment()) < 2 and time.monotonic() - start < SESSION_S + 10:
            self.consumer.poll(0.1)
        took = time.monotonic() - start
        verdict = ("left the group" if took < LEFT_WITHIN_S else "session timed out" if took < SESSION_S + 4
                   else "not taken over")
        say("survivor took the partition over", verdict)
        say("measure", "takeover s", round(took, 2))
        self.consumer.close()


# ---------------------------------------------------------------------------------------- programs
def context_manager(kind: Kind, bootstrap: str, topic: str) -> None:
    """``with Consumer(conf) as c:`` reads, then the block ends: the consumer closes and leaves."""
    conf = config(bootstrap)
    survivor = Survivor(conf, topic)
    before = tids()
    with kind.make(conf) as consumer:
        kind.facts(consumer)
        say("enter returned the consumer", type(consumer).__name__ == kind.cls.__name__)
        consumer.subscribe([topic])
        survivor.share_with(consumer)
        leaving = time.monotonic()
    say("measure", "with block's exit s", round(time.monotonic() - leaving, 3))
    threads_left(before, "after the with block")
    say("poll after the with block", *outcome(lambda: consumer.poll(0)))
    survivor.takeover()


def drop_without_close(kind: Kind, bootstrap: str, topic: str) -> None:
    """A consumer read with and let go, never closed (helpers that read offsets do this)."""
    conf = config(bootstrap)
    survivor = Survivor(conf, topic)
    before = tids()
    consumer = kind.make(conf)
    kind.facts(consumer)
    consumer.subscribe([topic])
    survivor.share_with(consumer)
    if kind.name != "plain":
        freed = weakref.ref(consumer)  # the plain client supports no weak reference
    del consumer
    if kind.name != "plain":
        say("agent", "freed by del", freed() is None)
    threads_left(before, "after del")
    survivor.takeover()


class Host:
    """An application object that keeps its consumer and hands it its own bound methods as
    callbacks: host and consumer refer to each other."""

    def __init__(self, kind: Kind, conf: dict[str, Any], topic: str) -> None:
        self.assigned = 0
        self.consumer = kind.make(conf)
        self.consumer.subscribe([topic], on_assign=self.on_assign)

    def on_assign(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        self.assigned += len(partitions)


def drop_in_a_cycle(kind: Kind, bootstrap: str, topic: str) -> None:
    """An application object and its consumer, dropped without ``close()``: a reference cycle,
    which only the garbage collector frees, for either kind."""
    before = tids()
    host = Host(kind, config(bootstrap), topic)
    say("records", read(host.consumer, 2 * PER_PARTITION), host.assigned)
    del host
    gc.collect()
    threads_left(before, "after del and a collection")


def broker_less(kind: Kind, bootstrap: str, topic: str) -> None:
    """No bootstrap.servers (a host's unit test): built, used and closed as the client allows."""
    before = tids()
    consumer = kind.make({"group.id": f"drop-in-{uuid.uuid4().hex[:8]}"})
    say("measure", "threads while open", len(tids() - before))
    consumer.subscribe([topic])
    say("poll", *outcome(lambda: consumer.poll(0.5)))
    say("consume", *outcome(lambda: consumer.consume(num_messages=3, timeout=0.2)))
    say("assignment", *outcome(consumer.assignment))
    say("close", *outcome(consumer.close))
    threads_left(before, "after close")


def kwargs_config(kind: Kind, bootstrap: str, topic: str) -> None:
    """``Consumer(**conf)``, and a dict completed by keyword arguments."""
    conf = config(bootstrap, **{"enable.auto.commit": False})
    before = tids()
    consumer = kind.make(**conf)
    consumer.subscribe([topic])
    say("records", read(consumer, 2 * PER_PARTITION))
    say("commit", *outcome(lambda: sorted(consumer.commit(asynchronous=False), key=lambda tp: tp.partition)))
    say("close", *outcome(consumer.close))
    group = config(bootstrap)["group.id"]
    mixed = kind.make({"bootstrap.servers": bootstrap}, **{**SETTINGS, "group.id": group})
    mixed.subscribe([topic])
    say("records", read(mixed, 2 * PER_PARTITION))
    say("close", *outcome(mixed.close))
    threads_left(before, "after close")


def kwargs_callbacks(kind: Kind, bootstrap: str, topic: str) -> None:
    """Every callback given as a keyword argument (client callbacks to the constructor, rebalance
    callbacks to subscribe): each is called as the client calls it."""
    calls: dict[str, Any] = {}

    def note(name: str) -> Callable[..., None]:
        def called(*args: Any) -> None:
            calls[name] = calls.get(name, 0) + 1
            if name in ("on_assign", "on_revoke"):
                say(name, sorted(p.partition for p in args[1]))
            if name == "on_commit":
                offsets = sorted(args[1], key=lambda p: p.partition)
                say(name, None if args[0] is None else str(args[0]), summary(offsets))
        return called

    logger = logging.getLogger(f"host-{uuid.uuid4().hex[:6]}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_Collect(lines := []))
    conf = config(bootstrap, **{"enable.auto.commit": False, "statistics.interval.ms": 200, "debug": "consumer"})
    consumer = kind.make(conf, on_commit=note("on_commit"), stats_cb=note("stats_cb"), error_cb=note("error_cb"),
                         throttle_cb=note("throttle_cb"), logger=logger)
    consumer.subscribe([topic], on_assign=note("on_assign"), on_revoke=note("on_revoke"), on_lost=note("on_lost"))
    say("records", read(consumer, 2 * PER_PARTITION))
    say("commit", *outcome(lambda: consumer.commit(asynchronous=True)))
    deadline = time.monotonic() + 10
    while not calls.get("on_commit") and time.monotonic() < deadline:
        consumer.poll(0.1)
    say("close", *outcome(consumer.close))
    # error_cb: a consumer whose only broker is a closed port (the client reports the failure)
    unreachable = kind.make({"bootstrap.servers": "127.0.0.1:1", "group.id": "unreachable"},
                            error_cb=note("error_cb"))
    deadline = time.monotonic() + 10
    while not calls.get("error_cb") and time.monotonic() < deadline:
        unreachable.poll(0.1)
    say("close unreachable", *outcome(unreachable.close))
    say("called", sorted(calls))
    say("logger got lines", bool(lines))


def every_method(kind: Kind, bootstrap: str, topic: str) -> None:
    """Every public method of ``Consumer`` on a subscribed consumer, with good and bad arguments,
    then the same calls after ``close()``."""
    conf = config(bootstrap, **{"enable.auto.commit": False})
    consumer = kind.make(conf)
    consumer.subscribe([topic])
    say("records", read(consumer, 2 * PER_PARTITION))
    parts = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    first = TopicPartition(topic, 0)
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("assignment", lambda: sorted(consumer.assignment(), key=lambda tp: tp.partition)),
        ("position", lambda: consumer.position(parts)),
        ("committed", lambda: consumer.committed(parts, timeout=10)),
        ("get_watermark_offsets", lambda: consumer.get_watermark_offsets(first, timeout=10)),
        ("get_watermark_offsets cached", lambda: consumer.get_watermark_offsets(first, cached=True)),
        ("offsets_for_times", lambda: consumer.offsets_for_times([TopicPartition(topic, 0, 0)], timeout=10)),
        ("list_topics", lambda: consumer.list_topics(topic, timeout=10)),
        ("cluster_id", lambda: type(consumer.cluster_id(timeout=10)).__name__),
        ("memberid", lambda: type(consumer.memberid()).__name__),
        ("consumer_group_metadata", consumer.consumer_group_metadata),
        ("pause", lambda: consumer.pause(parts)),
        ("resume", lambda: consumer.resume(parts)),
        ("seek", lambda: consumer.seek(TopicPartition(topic, 0, PER_PARTITION))),
        ("store_offsets", lambda: consumer.store_offsets(offsets=[TopicPartition(topic, 0, PER_PARTITION)])),
        ("commit sync", lambda: sorted(consumer.commit(asynchronous=False), key=lambda tp: tp.partition)),
        ("commit offsets", lambda: consumer.commit(offsets=[TopicPartition(topic, 1, PER_PARTITION)],
                                                   asynchronous=False)),
        ("commit async, nothing new", lambda: consumer.commit()),
        ("commit async keyword", lambda: consumer.commit(**{"async": False})),
        ("consume", lambda: consumer.consume(num_messages=5, timeout=0.5)),
        ("poll", lambda: consumer.poll(timeout=0.5)),
        ("incremental_assign", lambda: consumer.incremental_assign([])),
        ("incremental_unassign", lambda: consumer.incremental_unassign([])),
        ("set_sasl_credentials", lambda: consumer.set_sasl_credentials("user", "password")),
        ("subscribe again", lambda: consumer.subscribe([topic])),
        ("unsubscribe", consumer.unsubscribe),
        ("assign", lambda: consumer.assign([TopicPartition(topic, 0, 0)])),
        ("unassign", consumer.unassign),
    ]
    wrong: list[tuple[str, Callable[[], Any]]] = [
        ("poll str", lambda: consumer.poll("soon")),
        ("poll None", lambda: consumer.poll(None)),
        ("consume zero", lambda: consumer.consume(0)),
        ("consume timeout str", lambda: consumer.consume(num_messages=1, timeout="soon")),
        ("subscribe a str", lambda: consumer.subscribe(topic)),
        ("subscribe a tuple", lambda: consumer.subscribe((topic,))),
        ("subscribe on_assign None", lambda: consumer.subscribe([topic], on_assign=None)),
        ("subscribe on_revoke not callable", lambda: consumer.subscribe([topic], on_revoke=5)),
        ("subscribe on_lost not callable", lambda: consumer.subscribe([topic], on_lost="x")),
        ("commit message str", lambda: consumer.commit(message="x")),
        ("commit offsets str", lambda: consumer.commit(offsets="x", asynchronous=False)),
        ("commit message and offsets", lambda: consumer.commit(message=None, offsets=None, asynchronous=False)),
        ("commit unknown keyword", lambda: consumer.commit(later=True)),
        ("position str", lambda: consumer.position("x")),
        ("seek str", lambda: consumer.seek("x")),
        ("unsubscribe with an argument", lambda: consumer.unsubscribe(1)),
    ]
    if kind.name != "async":
        wrong += [("close with an argument", lambda: consumer.close(1)),
                  ("exit with one argument", lambda: consumer.__exit__(None))]
    for name, call in calls + wrong:
        say(name, *outcome(call))
    say("close", *outcome(consumer.close))
    for name, call in calls + wrong:
        say(f"after close: {name}", *outcome(call))
    say("close again", *outcome(consumer.close))
    say("with after close", *outcome(lambda: consumer.__exit__(None, None, None)))
    called = {name.split(" ")[0] for name, _ in calls} | {"cluster_id", "close"}
    say("public methods not called", sorted(m for m in dir(Consumer) if not m.startswith("_") and m not in called))


def arity(kind: Kind, bootstrap: str, topic: str) -> None:
    """A wrong number of arguments to a wrapped method: a TypeError either way, worded by Python
    for the agent's wrappers (their signatures are Python's), by the C client for the plain one."""
    consumer = kind.make(config(bootstrap))
    for name, call in [("poll", lambda: consumer.poll(1, 2)), ("consume", lambda: consumer.consume(1, 2, 3)),
                       ("subscribe", lambda: consumer.subscribe([topic], None, None, None, None)),
                       ("poll unknown keyword", lambda: consumer.poll(wait=1))]:
        result = outcome(call)
        say("differs", name, result[:2])
        say("measure", name, result[2:])
    consumer.close()


def subclass_skips_init(kind: Kind, bootstrap: str, topic: str) -> None:
    """A host subclass whose ``__init__`` never calls the client's, and one that does."""

    class Skips(kind.cls):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            pass

    class Calls(kind.cls):  # type: ignore[misc, valid-type]
        def __init__(self, conf: dict[str, Any]) -> None:
            super().__init__(kind.args((conf,), {})[0][0])

    skipped = Skips()
    topic_partition = TopicPartition(topic, 0)
    for name, call in [("poll", lambda: skipped.poll(0)), ("consume", lambda: skipped.consume(1, 0)),
                       ("subscribe", lambda: skipped.subscribe([topic])),
                       ("subscribe with callbacks", lambda: skipped.subscribe([topic], on_assign=print)),
                       ("commit", lambda: skipped.commit(asynchronous=False)), ("unsubscribe", skipped.unsubscribe),
                       ("assignment", skipped.assignment), ("position", lambda: skipped.position([topic_partition])),
                       ("memberid", skipped.memberid), ("close", skipped.close), ("close again", skipped.close)]:
        say(name, *outcome(call))
    with Skips() as entered:
        say("with", type(entered).__name__ == "Skips")
    calling = Calls(config(bootstrap))
    calling.subscribe([topic])
    say("subclass records", read(calling, 2 * PER_PARTITION))
    say("subclass close", *outcome(calling.close))


def init_errors(kind: Kind, bootstrap: str, topic: str) -> None:
    """Constructor calls the client refuses: the same exception, word for word, and no thread left."""
    before = tids()
    group = {"group.id": "g"}
    for name, args, kwargs in [
            ("None", (None,), {}), ("nothing", (), {}), ("a list", ([("group.id", "g")],), {}),
            ("two dicts", ({**group}, {}), {}), ("no group.id", ({"bootstrap.servers": bootstrap},), {}),
            ("unknown property", ({**group, "no.such.property": 1},), {}),
            ("bad value", ({**group, "session.timeout.ms": "soon"},), {}),
            ("empty value", ({**group, "session.timeout.ms": None},), {}),
            ("a key that is no string", ({**group, 1: 2},), {}),
            ("on_commit not callable", ({**group, "on_commit": 5},), {}),
            ("on_commit None", ({**group, "on_commit": None},), {}),
            ("stats_cb not callable", ({**group, "stats_cb": "x", "statistics.interval.ms": 100},), {}),
            ("error_cb not callable", ({**group, "error_cb": 5},), {}),
            ("on_commit keyword not callable", (group,), {"on_commit": 3}),
            ("logger keyword not a logger", (group,), {"logger": 5})]:
        say(name, *outcome(lambda: kind.make(*args, **kwargs).close()))
    threads_left(before, "after refused constructions")


def init_again(kind: Kind, bootstrap: str, topic: str) -> None:
    """``__init__`` called again: refused while open (the consumer reads on); after close it
    opens the consumer anew."""
    before = tids()
    consumer = kind.make(config(bootstrap))
    again_args, _ = kind.args((config(bootstrap),), {})
    say("init again while open", *outcome(lambda: consumer.__init__(*again_args)))
    consumer.subscribe([topic])
    say("records after init again", read(consumer, 2 * PER_PARTITION))
    say("close", *outcome(consumer.close))
    say("init again after close", *outcome(lambda: consumer.__init__(*again_args)))
    consumer.subscribe([topic])
    say("records after reopening", read(consumer, 2 * PER_PARTITION))
    say("close reopened", *outcome(consumer.close))
    threads_left(before, "after close")


def python_protocols(kind: Kind, bootstrap: str, topic: str) -> None:
    """What Python itself does with the object: isinstance, pickling, copying, repr, hashing, and
    the two things a subclass allows that the C type does not (weak references, attributes)."""
    consumer = kind.make(config(bootstrap))
    say("isinstance Consumer", isinstance(consumer, Consumer))
    say("class is the one built", consumer.__class__ is kind.cls and type(consumer) is kind.cls)
    say("pickle", *outcome(lambda: pickle.dumps(consumer)))
    say("copy", *outcome(lambda: copy.copy(consumer)))
    say("deepcopy", *outcome(lambda: copy.deepcopy(consumer)))
    say("repr", normalized(repr(consumer)))
    say("hash and equality", isinstance(hash(consumer), int), consumer == consumer,
        consumer != kind.make(config(bootstrap)))
    say("public methods", sorted(m for m in dir(consumer) if not m.startswith("_") and m in dir(Consumer)))
    say("differs", "weak reference", outcome(lambda: weakref.ref(consumer) and "made")[:2])
    say("differs", "new attribute", outcome(lambda: setattr(consumer, "host_note", 1))[:2])
    say("close", *outcome(consumer.close))


def signal_interrupt(kind: Kind, bootstrap: str, topic: str) -> None:
    """Ctrl-C while the host blocks in poll() or consume() (nothing to fetch: no broker): a
    KeyboardInterrupt at once; the consumer still works afterwards."""
    consumer = kind.make({"group.id": f"drop-in-{uuid.uuid4().hex[:8]}"})
    consumer.subscribe([topic])
    for name, call in [("poll", lambda: consumer.poll(5)), ("consume", lambda: consumer.consume(1, 5))]:
        start = time.monotonic()
        try:
            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
            result = summary(call())
            time.sleep(2)  # the signal lands here if the call returned first
            say(name, "returned", result)
        except KeyboardInterrupt:
            say(name, "KeyboardInterrupt", "within 3 s" if time.monotonic() - start < 3 else "late")
    say("poll afterwards", *outcome(lambda: consumer.poll(0.1)))
    say("close", *outcome(consumer.close))


def fork(kind: Kind, bootstrap: str, topic: str) -> None:
    """A host forks with a consumer open (multiprocessing's fork start method does): how the child
    ends when it leaves at once, exits normally, or drops its copy of the consumer; the parent
    reads on and closes."""
    conf = config(bootstrap)
    before = tids()
    consumer = kind.make(conf)
    consumer.subscribe([topic])
    say("records before fork", read(consumer, PER_PARTITION))
    for child in ("os._exit", "sys.exit", "del"):
        pid = os.fork()
        if pid == 0:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a client that aborts leaves no core file
            if child == "os._exit":
                os._exit(0)
            if child == "del":
                del consumer
            sys.stdout.flush()
            sys.exit(0)  # atexit handlers and interpreter teardown run in the child
        start = time.monotonic()
        _, status = os.waitpid(pid, 0)
        ended = (f"signal {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
                 else f"exit {os.WEXITSTATUS(status)}")
        say("child", child, ended, "within 5 s" if time.monotonic() - start < 5 else "late")
    say("parent records after the forks", read(consumer, PER_PARTITION))
    say("close", *outcome(consumer.close))
    threads_left(before, "after close")


def exit_without_close(kind: Kind, bootstrap: str, topic: str) -> None:
    """The program ends with its consumer open: how the interpreter exits is the test's to see."""
    consumer = kind.make(config(bootstrap))
    consumer.subscribe([topic])
    say("records", read(consumer, 2 * PER_PARTITION))
    _KEPT.append(consumer)  # open until the interpreter tears the module down
    say("returning with the consumer open")


_KEPT: list[Any] = []


PROGRAMS: dict[str, Callable[[Kind, str, str], None]] = {
    f.__name__: f for f in (context_manager, drop_without_close, drop_in_a_cycle, broker_less, kwargs_config,
                            kwargs_callbacks, every_method, arity, subclass_skips_init, init_errors, init_again,
                            python_protocols, signal_interrupt, fork, exit_without_close)}
# What an AsyncInstrumentedConsumer is not: a Consumer subclass (protocols, subclassing, calling
# __init__ again, arity of its wrappers), nor a consumer polled on the program's thread (signals, fork).
NOT_ASYNC = frozenset({"arity", "subclass_skips_init", "init_again", "python_protocols", "signal_interrupt", "fork"})
# Its own close() and async with take no arguments of the client's: every_method skips those probes.
ASYNC_OWN = frozenset({"close with an argument", "exit with one argument"})


def main(kind_name: str, bootstrap: str, topic: str, telemetry: str, program: str) -> None:
    kind = Kind(kind_name, telemetry)
    agent_log = logging.getLogger("consumer_agent")
    agent_log.addHandler(_Collect(kind.log))
    agent_log.setLevel(logging.DEBUG)
    PROGRAMS[program](kind, bootstrap, topic)
    if kind.name != "plain":
        say("agent", "log", kind.log)
    say("end")


if __name__ == "__main__":
    main(*sys.argv[1:6])
