"""The broker's ``uniform`` assignor when subscriptions differ (``UniformHeterogeneousAssignmentBuilder``,
Kafka 4.2.0, after KAFKA-17710).

Every member keeps all previous partitions of topics it still subscribes to. Topics are
taken by (partitions per subscriber descending, subscribers ascending, topic id); each
unowned partition, ascending, goes to the least loaded subscriber (ties: the lower member
index, i.e. earlier in ``HashMap`` order). Then up to 16 rounds over the topics move each
topic's highest-numbered partitions from its most to its least loaded subscribers until
their totals differ by at most one: balanced per topic, only nearly balanced overall.
"""
from __future__ import annotations

import uuid

from pipelines.simulator import java_order
from pipelines.simulator.group import Assignment, Member

MAX_ITERATION_COUNT = 16


class _LoadRanges:
    """``MemberAssignmentBalancer``: the least and most loaded subscribers of one topic, as two ranges
    of a list sorted once by load, widened one load level at a time as partitions move."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes  # live: the builder updates it as partitions move

    def initialize(self, members: list[int]) -> int:
        self.sorted = sorted(members, key=lambda i: (self.sizes[i], i))
        self.least_end, self.next_least = 0, 0
        self.least_count = self.sizes[self.sorted[0]] - 1
        self.most_start = self.most_end = len(self.sorted)
        self.most_count = self.sizes[self.sorted[-1]] + 1
        self.next_most = len(self.sorted) - 1
        return self.sizes[self.sorted[-1]] - self.sizes[self.sorted[0]]

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while (self.least_end < len(self.sorted)
                   and self.sizes[self.sorted[self.least_end]] == self.least_count):
                self.least_end += 1
            self.next_least = 0
        self.next_least += 1
        return self.sorted[self.next_least - 1]

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = self.sizes[self.sorted[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and self.sizes[self.sorted[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        self.next_most -= 1
        return self.sorted[self.next_most + 1]

    def exclude_most_loaded(self) -> None:
        """Swap the member last returned by ``next_most_loaded`` out of the most loaded range."""
        i, last = self.next_most + 1, self.most_end - 1
        self.sorted[i], self.sorted[last] = self.sorted[last], self.sorted[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Builder:
    def __init__(self, order: list[Member], partitions: dict[str, int], previous: Assignment,
                 topic_ids: dict[str, uuid.UUID] | None):
        self.order = order
        self.partitions = partitions
        self.subscribers = {t: [i for i, m in enumerate(order) if t in m.subscription]
                            for t in partitions if any(t in m.subscription for m in order)}
        self.tiebreak = ((lambda t: java_order.uuid_key(topic_ids[t])) if topic_ids is not None
                         else list(partitions).index)
        self.sizes = [0] * len(order)
        self.owners = {t: [-1] * partitions[t] for t in self.subscribers}
        for i, member in enumerate(order):
            for t, p in previous[member.member_id]:
                self.owners[t][p] = i
                self.sizes[i] += 1

    def sort_topics(self, topics: list[str]) -> list[str]:
        return sorted(topics, key=lambda t: (-(self.partitions[t] / len(self.subscribers[t])),
                                             len(self.subscribers[t]), self.tiebreak(t)))

    def assign_partition(self, topic: str, partition: int, member: int) -> None:
        old = self.owners[topic][partition]
        if old != -1:
            self.sizes[old] -= 1
        self.owners[topic][partition] = member
        self.sizes[member] += 1

    def assign_remaining(self) -> None:
        loads = _LoadRanges(self.sizes)
        for topic in self.sort_topics([t for t, owners in self.owners.items() if -1 in owners]):
            loads.initialize(self.subscribers[topic])
            for p, owner in enumerate(self.owners[topic]):
                if owner == -1:
                    self.assign_partition(topic, p, loads.next_least_loaded())

    def balance_topics(self) -> None:
        topics = self.sort_topics([t for t, subs in self.subscribers.items() if len(subs) >= 2])
        loads = _LoadRanges(self.sizes)
        last_rebalanced = -1
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic in enumerate(topics):
                if index == last_rebalanced:
                    return  # a full loop without moves
                if self.balance_topic(topic, loads) > 0 or last_rebalanced == -1:
                    last_rebalanced = index

    def balance_topic(self, topic: str, loads: _LoadRanges) -> int:
        if loads.initialize(self.subscribers[topic]) <= 1:
            return 0
        owners = self.owners[topic]
        by_owner = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(by_owner):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        moved = 0
        while not loads.is_balanced():
            giver = loads.next_most_loaded()
            while giver != -1 and end.get(giver, 0) - start.get(giver, 0) <= 0:
                loads.exclude_most_loaded()
                giver = loads.next_most_loaded()
            if giver == -1:
                break
            end[giver] -= 1
            partition = by_owner[end[giver]]
            taker = loads.next_least_loaded()
            if loads.is_balanced():
                break
            self.assign_partition(topic, partition, taker)
            moved += 1
        return moved


def uniform_heterogeneous(order: list[Member], partitions: dict[str, int], previous: Assignment,
                          topic_ids: dict[str, uuid.UUID] | None) -> Assignment:
    """``order``: the members in ``GroupSpec.memberIds()`` order; ``previous``: valid claims only."""
    builder = _Builder(order, partitions, previous, topic_ids)
    builder.assign_remaining()
    builder.balance_topics()
    target: Assignment = {m.member_id: set() for m in order}
    for topic, owners in builder.owners.items():
        for p, owner in enumerate(owners):
            target[order[owner].member_id].add((topic, p))
    return target
