"""The assignor models against the real thing: librdkafka 2.16 consumers on the local broker (4.2.0).

Each group grows from 1 to 4 plain consumers subscribed to two topics (5 and 3 partitions),
one at a time, then loses its two oldest members; after each change we wait until the
group has settled and compare every member's ``assignment()`` with the model's assignment
for the observed member ids, given the assignment observed before the change. Growing
checks stickiness and topic order; shrinking also checks member order (which members
take over the leaver's partitions). The classic protocol runs the assignor in the
leader client (``partition.assignment.strategy``); ``group.protocol=consumer`` runs it in
the broker (``group.remote.assignor``), which also needs the topic ids for its topic order.

cooperative-sticky is also checked from a fresh group: its members first join subscribed
to a one-partition gate topic, then all switch to the real topics at the same instant, so
the leader assigns with nothing of them owned (started together, they would form several
generations). A slow heartbeat keeps a member from learning of the switch from the broker
before it has switched itself.

The KIP-848 models are exact up to one order they cannot see: the order in which the
broker inserted members and topics into its Java hash maps, which orders keys sharing a
bucket (about 1 pair in 16). The models take it from their input, so a KIP-848 step
matches if the observation equals the model's result for some input order; the report
counts the steps where that order mattered.
"""
from __future__ import annotations

import itertools
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, TopicCollection

from pipelines.simulator.assignors import assign
from pipelines.simulator.group import Assignment, Member
from pipelines.simulator.handoff import classic_cooperative_rounds

PARTITION_COUNTS = (5, 3)
MAX_MEMBERS = 4
QUIET_S = 0.5  # no change for this long, then ask the broker whether the group agrees
STEP_TIMEOUT_S = 20.0
CLIENT_SETTINGS = {
    # Classic: learn of a rebalance within 100 ms instead of 3 s.
    "classic": {"heartbeat.interval.ms": 100, "session.timeout.ms": 6000},
    # KIP-848: the broker sets the heartbeat interval (1 s on the test broker).
    "consumer": {"group.protocol": "consumer"},
}


def client_config(assignor: str) -> dict[str, object]:
    protocol, name = assignor.split(":")
    key = "partition.assignment.strategy" if protocol == "classic" else "group.remote.assignor"
    return {**CLIENT_SETTINGS[protocol], key: name, "enable.auto.commit": False}


class LiveGroup:
    """Consumers of one group, each polled from its own thread, which also applies (re)subscriptions
    and leaves the group when its consumer is removed."""

    def __init__(self, kafka, group_id: str, settings: dict[str, object]):
        self.kafka, self.group_id, self.settings = kafka, group_id, settings
        self.wanted: list[list[str] | None] = []  # per consumer: its topics, None once removed
        self.seen: dict[int, tuple[str, frozenset]] = {}  # per live consumer: member id, assignment
        self.threads: list[threading.Thread] = []
        self.switch: threading.Barrier | None = None  # resubscriptions wait here to happen together

    def add(self, topics: list[str]) -> None:
        self.wanted.append(topics)
        thread = threading.Thread(target=self._poll, args=(len(self.wanted) - 1,), daemon=True)
        thread.start()
        self.threads.append(thread)

    def remove(self, index: int) -> None:
        self.wanted[index] = None

    def resubscribe(self, topics: list[str]) -> None:
        self.switch = threading.Barrier(sum(wanted is not None for wanted in self.wanted))
        self.wanted = [topics if wanted is not None else None for wanted in self.wanted]

    def _poll(self, index: int) -> None:
        consumer = Consumer(self.kafka.consumer_config(self.group_id, **self.settings))
        subscribed = None
        try:
            while self.wanted[index] is not None:
                if self.wanted[index] != subscribed:
                    if subscribed is not None and self.switch is not None:
                        self.switch.wait(timeout=STEP_TIMEOUT_S)
                    subscribed = self.wanted[index]
                    consumer.subscribe(subscribed)
                consumer.poll(0.05)
                self.seen[index] = (consumer.memberid() or "",
                                    frozenset((p.topic, p.partition) for p in consumer.assignment()))
        finally:
            consumer.close()
            self.seen.pop(index, None)

    def settled(self, partitions: set[tuple[str, int]]) -> Assignment:
        """The assignment once every consumer is in, ``partitions`` are owned once each, nothing
        changed for QUIET_S, and the broker has the group stable with the same view (and
        KIP-848 targets)."""
        deadline = time.monotonic() + STEP_TIMEOUT_S
        last, since = None, time.monotonic()
        while time.monotonic() < deadline:
            snapshot = dict(self.seen)
            owned = [tp for _, tps in snapshot.values() for tp in tps]
            live = sum(wanted is not None for wanted in self.wanted)
            complete = (len(snapshot) == live and all(mid for mid, _ in snapshot.values())
                        and len(owned) == len(set(owned)) and set(owned) == partitions)
            if not complete or snapshot != last:
                last, since = (snapshot if complete else None), time.monotonic()
            elif time.monotonic() - since >= QUIET_S and self._broker_agrees(snapshot):
                return {mid: set(tps) for mid, tps in snapshot.values()}
            time.sleep(0.05)
        raise AssertionError(f"group {self.group_id} did not settle: {self.seen}")

    def _broker_agrees(self, snapshot: dict[int, tuple[str, frozenset]]) -> bool:
        admin = self.kafka.admin()  # keep a reference: the future fails if the handle is collected
        description = admin.describe_consumer_groups([self.group_id])[self.group_id].result(timeout=10)
        if description.state != ConsumerGroupState.STABLE:
            return False
        local = {mid: tps for mid, tps in snapshot.values()}
        broker = {}
        for member in description.members:
            held = frozenset((p.topic, p.partition) for p in member.assignment.topic_partitions)
            target = member.target_assignment
            if target is not None and held != frozenset((p.topic, p.partition) for p in target.topic_partitions):
                return False
            broker[member.member_id] = held
        return broker == local

    def close(self) -> None:
        self.wanted = [None] * len(self.wanted)
        for thread in self.threads:
            thread.join(timeout=30)


@pytest.fixture
def topics(kafka, unique) -> tuple[dict[str, int], dict[str, uuid.UUID]]:
    """Two fresh topics (name -> partition count) and their topic ids."""
    partitions = {kafka.create_topic(f"sim-{i}-{unique}", count): count
                  for i, count in enumerate(PARTITION_COUNTS)}
    admin = kafka.admin()  # keep a reference: the futures fail if the handle is collected
    described = admin.describe_topics(TopicCollection(list(partitions)))
    ids = {}
    for name, future in described.items():
        topic_id = future.result(timeout=30).topic_id
        msb, lsb = topic_id.get_most_significant_bits(), topic_id.get_least_significant_bits()
        ids[name] = uuid.UUID(int=((msb % 2 ** 64) << 64) | (lsb % 2 ** 64))
    return partitions, ids


def all_partitions(partitions: dict[str, int]) -> set[tuple[str, int]]:
    return {(t, p) for t, count in partitions.items() for p in range(count)}


def members_of(observed: Assignment, topics: list[str]) -> list[Member]:
    return [Member(member_id, None, frozenset(topics)) for member_id in observed]


def expected_after_change(assignor: str, members: list[Member], partitions: dict[str, int],
                          previous: Assignment | None, topic_ids: dict[str, uuid.UUID]) -> Assignment:
    """Classic cooperative groups settle after rounds that hand withheld partitions over; the
    others settle on the assignor's result (KIP-848: the target, computed once per change)."""
    if assignor == "classic:cooperative-sticky":
        return classic_cooperative_rounds(assignor, members, partitions, previous)[-1]
    return assign(assignor, members, partitions, previous, topic_ids)


def candidates(assignor: str, members: list[Member], partitions: dict[str, int], previous: Assignment | None,
               topic_ids: dict[str, uuid.UUID]) -> list[Assignment]:
    """The model's result; for KIP-848, its results over every input order of members and topics."""
    orders = (itertools.product(itertools.permutations(members), itertools.permutations(partitions))
              if assignor.startswith("consumer:") else [(members, partitions)])
    results: list[Assignment] = []
    for member_order, topic_order in orders:
        result = expected_after_change(assignor, list(member_order), {t: partitions[t] for t in topic_order},
                                       previous, topic_ids)
        if result not in results:
            results.append(result)
    return results


Step = tuple[int, Assignment, list[Assignment]]  # members, observed, the model's candidates


def match_report(assignor: str, steps: list[Step]) -> str:
    matched = sum(observed in expected for _, observed, expected in steps)
    ambiguous = sum(len(expected) > 1 for _, _, expected in steps)
    lines = [f"{assignor}: {matched}/{len(steps)} steps match ({ambiguous} where input order mattered)"]
    lines += [f"  {n} members: observed {sorted((m[:8], sorted(t)) for m, t in observed.items())}"
              f" expected one of {[sorted((m[:8], sorted(t)) for m, t in e.items()) for e in expected]}"
              for n, observed, expected in steps if observed not in expected]
    return "\n".join(lines)


@pytest.mark.parametrize("assignor", ["classic:range", "classic:roundrobin", "classic:cooperative-sticky",
                                      "consumer:uniform", "consumer:range"])
def test_growing_and_shrinking_group_matches_the_model(kafka, unique, topics, assignor):
    partitions, topic_ids = topics
    group = LiveGroup(kafka, f"sim-{assignor.replace(':', '-')}-{unique}", client_config(assignor))
    changes = [lambda: group.add(list(partitions))] * MAX_MEMBERS + [lambda: group.remove(0), lambda: group.remove(1)]
    steps: list[Step] = []
    previous = None
    try:
        for change in changes:
            change()
            observed = group.settled(all_partitions(partitions))
            expected = candidates(assignor, members_of(observed, list(partitions)), partitions, previous, topic_ids)
            steps.append((len(observed), observed, expected))
            previous = observed
    finally:
        group.close()
    report = match_report(assignor, steps)
    print(report)
    assert all(observed in expected for _, observed, expected in steps), report


def test_fresh_cooperative_sticky_group_matches_the_model(kafka, unique, topics):
    partitions, topic_ids = topics
    gate = kafka.create_topic(f"sim-gate-{unique}", 1)
    steps: list[Step] = []
    for n in range(2, MAX_MEMBERS + 1):
        settings = {**client_config("classic:cooperative-sticky"), "heartbeat.interval.ms": 1000}
        group = LiveGroup(kafka, f"sim-fresh-{n}-{unique}", settings)
        try:
            for _ in range(n):
                group.add([gate])
            group.settled({(gate, 0)})
            group.resubscribe(list(partitions))
            observed = group.settled(all_partitions(partitions))
        finally:
            group.close()
        expected = candidates("classic:cooperative-sticky", members_of(observed, list(partitions)), partitions,
                              None, topic_ids)
        steps.append((n, observed, expected))
    report = match_report("fresh classic:cooperative-sticky", steps)
    print(report)
    assert all(observed in expected for _, observed, expected in steps), report
