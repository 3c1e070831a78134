"""The conformance programs, their Python player, and what two agents' event streams must agree on.

A program is data: consumer settings (those both clients share, and each client's own names for the
rest, auto commits on or off), topics, and steps: produce, subscribe, read (poll until N records came),
commit (sync, or async and poll until its callback), stall (no poll until N ms after the last one), await
(poll until the listener made the given calls and N records came), close. ``play`` runs one on
consumer_agent's InstrumentedConsumer; tests/jvm_agent/ConformanceDriver.java runs the same JSON on the
Java agent's. ``comparable`` reduces one agent's events to what both must agree on, kind by kind and
field by field: ids, times and what only one client has are set aside, each with its reason below.
"""
from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from consumer_agent import InstrumentedConsumer
from consumer_agent.lifecycle import REASONS
from tests.support.jvm_drivers import run_driver
from tests.support.telemetry_log import TelemetryLog

Event = dict[str, Any]
STEP_TIMEOUT_S = 60.0
# The progress interval is below max.poll.interval.ms, so the Python agent's first poll after the stall takes
# its slow path and sees librdkafka's report of it (consumer_agent.instrumented). The timings are wide where they
# are not what is tested, for a loaded machine (a CI run's produce took 3.9 s after a 2.5 s gap, and librdkafka
# left the group at 6 s): the poll gap lasts 4.5 s from the last poll, the commit and produce before it included:
# over half the progress interval (a gap probe finds it wherever the probes fall), 3.5 s before the timer's tick
# would take its place, 5.5 s below max.poll.interval.ms. The stall past max.poll.interval.ms lasts 2.5 s more.
# Envelope fields set aside: ids and times; the group (each run has its own); the assignor, which each
# client names its own way (range, org.apache.kafka.clients.consumer.RangeAssignor); the cluster id,
# which an event carries only once the emitter has it; seq, shifted by the client errors set aside; the
# member id, an id (after an expired max.poll.interval.ms librdkafka forgets it, the Java client does not).
ASIDE = {"event_id", "event_time_ms", "agent_id", "pid", "group_id", "assignor", "cluster_id", "seq", "member_id"}
# Body fields set aside: times, and what only one client has. callback_calls: the Java client's listener
# cannot call assign() (the Python agent notes the calls librdkafka's callbacks make); rebalance_timing: the
# Java client's coordinator times its rebalances (librdkafka shows Python none); the versions and
# the config snapshot are each client's own (the settings both were given are compared: ``_config``).
BODY_ASIDE = {"callback_ms", "since_assign_ms", "duration_ms", "waited_ms", "timestamp_ms", "callback_calls",
              "rebalance_timing", "agent_version", "client_version", "librdkafka_version", "config"}
COMMON = {"client.id": "conformance", "enable.auto.commit": "false", "auto.offset.reset": "earliest",
          "session.timeout.ms": "10000", "heartbeat.interval.ms": "1000", "max.poll.interval.ms": "10000",
          "ssl.key.password": "never-shown", "lens.progress.interval.ms": "8000"}
PROGRESS_INTERVAL_MS = float(COMMON["lens.progress.interval.ms"])
RANGE = {"python": {"partition.assignment.strategy": "range"},
         "java": {"partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor"}}


def _produce(topic: str, *counts: int) -> list[dict[str, Any]]:
    return [{"do": "produce", "topic": topic, "partition": p, "count": n} for p, n in enumerate(counts)]


def life(bootstrap: str, topics: dict[str, str]) -> dict[str, Any]:
    """A member's life under classic range: assign, commits sync and async, a poll gap, commit-on-revoke on a
    subscription change, a stall past max.poll.interval.ms (lost, assigned again), close."""
    steps = [*_produce("t1", 5, 5), {"do": "subscribe", "topics": ["t1"]}, {"do": "read", "records": 10},
             {"do": "commit", "sync": True}, *_produce("t1", 3, 3),
             {"do": "stall", "ms": 4500},  # a poll gap (the commit and produce in it), shorter than the interval
             {"do": "read", "records": 6},
             {"do": "commit", "sync": False}, *_produce("t1", 2, 2), {"do": "read", "records": 4},
             *_produce("t2", 4, 4), {"do": "subscribe", "topics": ["t2"]}, {"do": "read", "records": 8},
             {"do": "stall", "ms": 12500}, {"do": "await", "callbacks": ["lost", "assigned"], "records": 8},
             {"do": "close"}]
    common = {**COMMON, "bootstrap.servers": bootstrap, "lens.commit.on.revoke": "true"}
    return {"topics": topics, "config": {"common": common, **RANGE}, "steps": steps}


def auto_committing(bootstrap: str, topics: dict[str, str]) -> dict[str, Any]:
    """A member that leaves the commits to its client (``enable.auto.commit``, the interval out of the run's reach):
    read, change its subscription (the client commits what was read before the revoke), read, close (and again)."""
    steps = [*_produce("t1", 5, 5), {"do": "subscribe", "topics": ["t1"]}, {"do": "read", "records": 10},
             *_produce("t2", 4, 4), {"do": "subscribe", "topics": ["t2"]}, {"do": "read", "records": 8},
             {"do": "close"}]
    common = {**COMMON, "bootstrap.servers": bootstrap, "enable.auto.commit": "true",
              "auto.commit.interval.ms": "600000"}
    return {"topics": topics, "config": {"common": common, **RANGE}, "steps": steps}


def broker_less(telemetry_bootstrap: str, topics: dict[str, str]) -> dict[str, Any]:
    """A consumer whose cluster never answers, its telemetry sent to one that does: subscribe, poll, close."""
    common = {**COMMON, "bootstrap.servers": "127.0.0.1:9", "lens.telemetry.bootstrap.servers": telemetry_bootstrap}
    steps = [{"do": "subscribe", "topics": ["t1"]}, {"do": "read", "records": 0}, {"do": "close"}]
    return {"topics": topics, "config": {"common": common, **RANGE}, "steps": steps}


class Player:
    """Plays a program on consumer_agent's InstrumentedConsumer (the Python twin of ConformanceDriver.java)."""

    def __init__(self, kafka: Any, program: dict[str, Any], telemetry: str, group: str) -> None:
        self._kafka = kafka
        self._program = program
        self.calls: list[str] = []
        self._commits = 0
        self._last_poll = time.monotonic()
        config = {**program["config"]["common"], **program["config"]["python"], "group.id": group,
                  "lens.telemetry.topic": telemetry, "on_commit": self._committed}
        self.consumer = InstrumentedConsumer(config)

    def _committed(self, _err: object, _partitions: list[TopicPartition]) -> None:
        self._commits += 1

    def _listener(self, name: str) -> Callable[[Any, list[TopicPartition]], None]:
        return lambda _consumer, _partitions: self.calls.append(name)

    def play(self) -> str:
        """Every step; the agent id."""
        for step in self._program["steps"]:
            getattr(self, f"_{step['do']}")(step)
        return self.consumer.agent_id

    def _topic(self, logical: str) -> str:
        return self._program["topics"][logical]

    def _produce(self, step: dict[str, Any]) -> None:
        topic = self._topic(step["topic"])
        self._kafka.seed(topic, (f"{topic}-{step['partition']}-{i}" for i in range(step["count"])),
                         partition=step["partition"])

    def _subscribe(self, step: dict[str, Any]) -> None:
        self.consumer.subscribe([self._topic(t) for t in step["topics"]], on_assign=self._listener("assigned"),
                                on_revoke=self._listener("revoked"), on_lost=self._listener("lost"))

    def _until(self, what: str, done: Callable[[int], bool]) -> None:
        """Poll until ``done(records handed out so far)``."""
        seen, deadline = 0, time.monotonic() + STEP_TIMEOUT_S
        while not done(seen):
            assert time.monotonic() < deadline, f"timed out: {what}"
            msg = self.consumer.poll(0.1)
            self._last_poll = time.monotonic()
            seen += msg is not None and not msg.error()

    def _read(self, step: dict[str, Any]) -> None:
        self._until(f"read {step['records']}", lambda seen: seen >= step["records"])

    def _commit(self, step: dict[str, Any]) -> None:
        if step["sync"]:
            self.consumer.commit(asynchronous=False)
            return
        before = self._commits
        self.consumer.commit(asynchronous=True)
        self._until("the asynchronous commit's callback", lambda _seen: self._commits > before)

    def _stall(self, step: dict[str, Any]) -> None:
        """No poll until ``ms`` after the last: the steps since (a commit, a produce) are part of the gap."""
        time.sleep(max(0.0, self._last_poll + step["ms"] / 1000 - time.monotonic()))

    def _await(self, step: dict[str, Any]) -> None:
        start, wanted = len(self.calls), step["callbacks"]
        made = lambda: [c for c in self.calls[start:] if c in wanted][:len(wanted)]  # noqa: E731
        self._until(f"{wanted}", lambda seen: made() == wanted and seen >= step["records"])

    def _close(self, _step: dict[str, Any]) -> None:
        self.consumer.close()


def _left(agent_id: str) -> Callable[[TelemetryLog], bool]:
    """The member's last event: leaving done, after close."""
    def done(log: TelemetryLog) -> bool:
        return any(e["kind"] == "state_transition" and e["body"]["to_state"] == "unsubscribed"
                   and e["body"]["reason"] == REASONS["close"] for e in log.of(agent_id))
    return done


def play_both(kafka: Any, tmp_path: Path, programs: dict[str, dict[str, Any]], telemetry: str,
              unique: str) -> tuple[list[Event], list[Event]]:
    """Play ``programs["python"]`` through the Python agent, then ``programs["java"]`` (the same on topics of
    its own) through the Java agent, both sending to ``telemetry``; each agent's events."""
    ids = {"python": Player(kafka, programs["python"], telemetry, f"conf-py-{unique}").play()}
    program = programs["java"]
    java = {**program, "config": {**program["config"], "java": {
        **program["config"]["java"], "group.id": f"conf-java-{unique}", "lens.telemetry.topic": telemetry}}}
    (tmp_path / "program.json").write_text(json.dumps(java))
    run_driver("ConformanceDriver", [kafka.bootstrap_servers, str(tmp_path / "program.json"),
                                     str(tmp_path / "out.json")], tmp_path)
    ids["java"] = json.loads((tmp_path / "out.json").read_text())["agent_id"]
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)  # validates every event against the schema
    try:
        for agent_id in ids.values():
            log.wait_for(_left(agent_id), 30, f"agent {agent_id}'s close")
        return log.of(ids["python"]), log.of(ids["java"])
    finally:
        log.close()


def _stall_as_the_java_client_shows_it(events: list[Event]) -> list[Event]:
    """librdkafka tells the application of an expired max.poll.interval.ms (a client error) before it serves
    the lost callback, and the Python agent enters stale, then rejoins from there when the new assignment
    comes; the Java client tells it nothing but onPartitionsLost, so its agent goes stable -> lost -> joining
    as that callback ends. The same life; written as the Java agent writes it (when librdkafka serves the lost
    callback first, the Python agent writes it so too). Into joining, a member is one round on or not yet:
    that transition's generation is set aside."""
    out, stalled = [], False
    for event in events:
        body = event["body"]
        if event["kind"] == "state_transition" and body["reason"] == REASONS["poll_interval_exceeded"]:
            body = {**body, "to_state": "lost", "reason": REASONS["lost"]}
            stalled = True
        elif event["kind"] == "state_transition" and stalled and body["reason"] == REASONS["rejoin"]:
            body = {**body, "from_state": "lost", "reason": REASONS["lost_done"]}
            stalled = False
        out.append({**event, "body": body})
    return [{**e, "generation": None} if e["kind"] == "state_transition"
            and e["body"]["reason"] == REASONS["lost_done"] else e for e in out]


def _plain(value: Any, logical: dict[str, str]) -> Any:
    """``value`` without the fields set aside, topics named as in the program, lists of partitions sorted."""
    if isinstance(value, dict):
        out = {k: _plain(v, logical) for k, v in value.items() if k not in BODY_ASIDE}
        if "topic" in out:
            out["topic"] = logical.get(out["topic"], out["topic"])
        if "topics" in out:
            out["topics"] = [logical.get(t, t) for t in out["topics"]]
        return out
    if isinstance(value, list):
        items = [_plain(v, logical) for v in value]
        return sorted(items, key=lambda i: (i.get("topic"), i.get("partition"))) if items and \
            isinstance(items[0], dict) and "partition" in items[0] else items
    return value


def comparable(events: list[Event], topics: dict[str, str],
               aside: frozenset[str] = frozenset()) -> list[tuple[str, dict[str, Any]]]:
    """One agent's events, in order, as both agents must agree on them (see the module docstring). Client
    errors are the clients' own, not the agents': compared apart (``client_errors``). Progress events are a
    timer's: how many fall in a run, and what each counts, depends on the run's pace (each agent's own tests
    hold them to the records). A run of first_fetch events is sorted by partition: which partition's first
    record a client hands out first is the client's. ``aside``: more fields a program's test sets aside."""
    logical = {real: name for name, real in topics.items()}
    kept = _stall_as_the_java_client_shows_it([e for e in events if e["kind"] not in ("client_error", "progress")
                                               and not _auto_commit(e)])
    out = []
    for e in kept:
        envelope = {k: v for k, v in e.items() if k not in ASIDE and k != "body"}
        out.append((e["kind"], {**envelope, **_without(_plain(e["body"], logical), aside)}))
    runs: list[tuple[str, dict[str, Any]]] = []
    for kind, run in itertools.groupby(out, key=lambda item: item[0]):
        run_list = list(run)
        runs += sorted(run_list, key=lambda item: (item[1]["topic"], item[1]["partition"])) \
            if kind == "first_fetch" else run_list
    return runs


def _without(value: Any, aside: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, aside) for k, v in value.items() if k not in aside}
    if isinstance(value, list):
        return [_without(v, aside) for v in value]
    return value


def _auto_commit(event: Event) -> bool:
    return event["kind"] == "commit" and event["body"]["mode"] == "auto"


def auto_commits(events: list[Event], topics: dict[str, str]) -> list[dict[str, Any]]:
    """The client's own commits, in order, compared apart from the stream: each client commits on its own schedule
    (librdkafka when it unassigns, the Java client right before its revoke callback) and hands the agent the
    result at its own moment (librdkafka's on_commit at a poll, the Java client's interceptor queue at the next
    callback or poll), so where an auto commit falls among the other events is the client's."""
    logical = {real: name for name, real in topics.items()}
    return [_plain(e["body"], logical) for e in events if _auto_commit(e)]


def ticks_after_first_records(events: list[Event]) -> list[str | None]:
    """For each run of first_fetch events (in sequence order), the cause of the progress tick right after it
    (None when the next event is no tick): the poll that handed out a newly assigned partition's first record
    ticks at once (``first_record``, or ``timer`` when the timer was due then)."""
    ordered = sorted(events, key=lambda e: e["seq"])
    causes = []
    for i, event in enumerate(ordered):
        if event["kind"] == "first_fetch" and (i + 1 == len(ordered) or ordered[i + 1]["kind"] != "first_fetch"):
            after = ordered[i + 1] if i + 1 < len(ordered) else None
            causes.append(after["body"].get("cause") if after and after["kind"] == "progress" else None)
    return causes


def client_errors(events: list[Event]) -> list[str]:
    return [e["body"]["name"] for e in events if e["kind"] == "client_error"]


def shared_config(python: list[Event], java: list[Event]) -> tuple[dict[str, str], dict[str, str]]:
    """The config snapshots of both members' first member_config, on the keys both clients were given."""
    snapshots = [next(e for e in events if e["kind"] == "member_config")["body"]["config"] for events in (python, java)]
    shared = set(snapshots[0]) & set(snapshots[1]) - {"group.id", "partition.assignment.strategy"}
    return tuple({k: snapshot[k] for k in sorted(shared)} for snapshot in snapshots)  # type: ignore[return-value]
