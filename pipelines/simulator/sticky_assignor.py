"""librdkafka's ``cooperative-sticky`` assignor (``rdkafka_sticky_assignor.c``), without racks.

A port of its ``assign_cb``, which follows the older Java ``AbstractStickyAssignor``
general path (no equal-subscription fast path). What decides the result:

- Consumers are ranked by (partitions held, member id as bytes) and every new or moved
  partition goes to the first eligible one in that ranking (``maybeAssignPartition``,
  ``reassignPartition``).
- Partitions are visited in ``sortPartitions`` order: with differing subscriptions by
  (potential consumers, topic, partition); with identical ones, first each owned partition
  taken round-robin from the most loaded consumers (ties: the greatest member id), then the
  unowned ones in ``rd_map`` iteration order, i.e. reversed insertion: topics in reversed
  Metadata order, partitions descending. When nothing is owned, all are sorted by (topic,
  partition), which makes a fresh group round-robin. The leader's Metadata lists topics by
  name (in every run against Kafka 4.2, whatever the creation or subscription order).
- ``performReassignments`` moves a partition only while the assignment is not balanced and
  its owner holds 2 more than another potential consumer; ``PartitionMovements`` may move
  an earlier-moved partition back instead (C builds the reverse pair before it looks at
  the partition's history, unlike Java). If the moves did not lower the imbalance score,
  the whole balancing step is undone.

``previous`` is one generation of owned partitions: a partition claimed by two members is
dropped for both (same generation), and the older-generation claims (``prevAssignment``)
are empty. Where C keeps a stale movement record for a partition that moved back to its
source (and would abort on touching it again), we drop the record, as Java does.
"""
from __future__ import annotations

import heapq
from collections import Counter

from pipelines.simulator.group import Assignment, Member, TopicPartition, potential_partitions

Pair = tuple[str, str]  # (source, destination) member ids


def _tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    return tp[0].encode(), tp[1]


class _Balancer:
    """The state ``assign_cb`` threads through ``balance``, with the C functions as methods."""

    def __init__(self, potential: dict[str, set[TopicPartition]],
                 consumers_of: dict[TopicPartition, list[str]], current: dict[str, set[TopicPartition]]):
        self.potential = potential
        self.consumers_of = consumers_of
        self.current = current
        self.owner = {tp: c for c, tps in current.items() for tp in tps}
        self.ranked = sorted(current, key=self._rank)
        self.movements: dict[TopicPartition, Pair] = {}
        self.by_topic: dict[str, dict[Pair, list[TopicPartition]]] = {}

    def _rank(self, consumer: str) -> tuple[int, bytes]:
        return len(self.current[consumer]), consumer.encode()

    def _resort(self) -> None:
        self.ranked.sort(key=self._rank)

    def maybe_assign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            consumer = next((c for c in self.ranked if tp in self.potential[c]), None)
            if consumer is not None:
                self.current[consumer].add(tp)
                self.owner[tp] = consumer
                self._resort()

    def can_participate(self, consumer: str) -> bool:
        held = self.current[consumer]
        return (len(held) < len(self.potential[consumer])
                or any(len(self.consumers_of[tp]) >= 2 for tp in held))

    def is_balanced(self) -> bool:
        if len(self.current[self.ranked[0]]) >= len(self.current[self.ranked[-1]]) - 1:
            return True
        for consumer in self.ranked:
            held = self.current[consumer]
            if len(held) == len(self.potential[consumer]):
                continue
            for tp in self.potential[consumer] - held:
                if len(held) < len(self.current[self.owner[tp]]):
                    return False
        return True

    def perform_reassignments(self, partitions: list[TopicPartition]) -> bool:
        performed, modified = False, True
        while modified:
            modified = False
            for tp in partitions:
                if self.is_balanced():
                    break
                owner = self.owner[tp]
                if any(other != owner and len(self.current[owner]) > len(self.current[other]) + 1
                       for other in self.consumers_of[tp]):
                    new_owner = next(c for c in self.ranked if tp in self.potential[c])
                    self._move(self._actual_partition_to_move(tp, owner, new_owner), new_owner)
                    performed = modified = True
        return performed

    def _actual_partition_to_move(self, tp: TopicPartition, owner: str, new_owner: str) -> TopicPartition:
        """``PartitionMovements_getTheActualPartitionToBeMoved``: undo an earlier opposite move if any."""
        undo = self.by_topic.get(tp[0], {}).get((new_owner, owner))
        return undo[0] if undo else tp

    def _move(self, tp: TopicPartition, new_owner: str) -> None:
        old_owner = self.owner[tp]
        source = old_owner
        if tp in self.movements:
            source = self._forget_movement(tp)
        if source != new_owner:
            self.movements[tp] = (source, new_owner)
            self.by_topic.setdefault(tp[0], {}).setdefault((source, new_owner), []).append(tp)
        self.current[old_owner].discard(tp)
        self.current[new_owner].add(tp)
        self.owner[tp] = new_owner
        self._resort()

    def _forget_movement(self, tp: TopicPartition) -> str:
        pair = self.movements.pop(tp)
        topic_moves = self.by_topic[tp[0]]
        topic_moves[pair].remove(tp)
        if not topic_moves[pair]:
            del topic_moves[pair]
        if not topic_moves:
            del self.by_topic[tp[0]]
        return pair[0]


def _score(current: dict[str, set[TopicPartition]]) -> int:
    """``getBalanceScore``: the sum of size differences over all consumer pairs."""
    sizes = [len(tps) for tps in current.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1:])


def _sort_partitions(current: dict[str, set[TopicPartition]], potential: dict[str, set[TopicPartition]],
                     consumers_of: dict[TopicPartition, list[str]]) -> list[TopicPartition]:
    """``sortPartitions`` (``isFreshAssignment`` is always false: the map has one entry per member)."""
    if len({frozenset(tps) for tps in potential.values()}) > 1:
        return sorted(consumers_of, key=lambda tp: (len(consumers_of[tp]), *_tp_key(tp)))
    remaining = {c: sorted((tp for tp in tps if tp in consumers_of), key=_tp_key)
                 for c, tps in current.items()}
    # the most loaded consumer first (ties: the greatest member id as bytes): a heap of
    # (-left, -rank), as a scan of every consumer per partition costs members x partitions
    rank = {c: i for i, c in enumerate(sorted(remaining, key=str.encode))}
    heap = [(-len(tps), -rank[c], c) for c, tps in remaining.items() if tps]
    heapq.heapify(heap)
    taken_from = {c: 0 for c in remaining}
    ordered: list[TopicPartition] = []
    while heap:
        left, neg_rank, most = heapq.heappop(heap)
        ordered.append(remaining[most][taken_from[most]])
        taken_from[most] += 1
        if left < -1:
            heapq.heappush(heap, (left + 1, neg_rank, most))
    if not ordered:
        return sorted(consumers_of, key=_tp_key)
    taken = set(ordered)
    return ordered + [tp for tp in reversed(list(consumers_of)) if tp not in taken]


def cooperative_sticky_assign(members: list[Member], partitions: dict[str, int],
                              previous: Assignment | None) -> Assignment:
    if not members:
        return {}
    previous = previous or {}
    topics = sorted((t for t in partitions if any(t in m.subscription for m in members)), key=str.encode)
    # partition2AllPotentialConsumers, insertion order; a topic's partitions share its list, and
    # members with one subscription share their set (neither is changed below): built once per
    # topic and subscription, not per partition and member
    subscribers = {t: [m.member_id for m in members if t in m.subscription] for t in topics}
    consumers_of: dict[TopicPartition, list[str]] = {(t, p): subscribers[t]
                                                     for t in topics for p in range(partitions[t])}
    by_subscription: dict[frozenset[str], set[TopicPartition]] = {}
    for m in members:
        if m.subscription not in by_subscription:
            by_subscription[m.subscription] = set(potential_partitions(m, partitions))
    potential = {m.member_id: by_subscription[m.subscription] for m in members}

    claims = Counter(tp for m in members for tp in previous.get(m.member_id, ()))
    current = {m.member_id: {tp for tp in previous.get(m.member_id, ()) if claims[tp] == 1}
               for m in members}
    sorted_partitions = _sort_partitions(current, potential, consumers_of)

    revocation_required = False
    for m in members:
        held = current[m.member_id]
        unsubscribed = {tp for tp in held if tp in consumers_of and tp[0] not in m.subscription}
        revocation_required |= bool(unsubscribed)
        held &= potential[m.member_id]
    kept = {tp for tps in current.values() for tp in tps}
    unassigned = [tp for tp in sorted_partitions if tp not in kept]

    run = _Balancer(potential, consumers_of, current)
    initializing = not current[run.ranked[-1]]
    run.maybe_assign(unassigned)
    movable = [tp for tp in sorted_partitions if len(consumers_of[tp]) >= 2]
    unassigned = [tp for tp in unassigned if len(consumers_of[tp]) >= 2]
    fixed = {c: current.pop(c) for c in list(run.ranked) if not run.can_participate(c)}
    run.ranked = [c for c in run.ranked if c not in fixed]
    before = {c: set(tps) for c, tps in current.items()}
    if run.ranked:
        if not revocation_required and unassigned:
            run.perform_reassignments(unassigned)
        performed = run.perform_reassignments(movable)
        if not initializing and performed and _score(current) >= _score(before):
            current = before
    return {m.member_id: set(current[m.member_id] if m.member_id in current else fixed[m.member_id])
            for m in members}
