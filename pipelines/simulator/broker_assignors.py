"""The broker's KIP-848 assignors as in Kafka 4.2.0: ``range`` and ``uniform`` (homogeneous case).

Read from the 4.2.0 ``kafka-group-coordinator`` classes (``assignor/RangeAssignor``,
``UniformAssignor``, ``UniformHomogeneousAssignmentBuilder``), which differ from the 2024
trunk in one rule: a member keeps its extra-partition slot only if it already holds the
partitions to fill it, or if the members left need every remaining slot. So in a fresh
group the extra partitions go to the *last* members, not the first.

Orders come from Java collections (``java_order``): members in ``HashMap`` order of their
ids, topics in ``HashSet<Uuid>`` order of their topic ids. Keys sharing a hash bucket
(about 1 pair in 16) are ordered by the broker's insertion history, for which the models
take the order of ``members`` and of ``partitions``; without ``topic_ids`` topics simply
come in the order of ``partitions``. ``previous`` stands for the previous *target*
assignment (the owned one once the group has settled).
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable

from pipelines.simulator import java_order
from pipelines.simulator.classic_assignors import range_blocks
from pipelines.simulator.group import Assignment, Member, valid_claims
from pipelines.simulator.uniform_heterogeneous import uniform_heterogeneous

TopicIds = dict[str, uuid.UUID]


def topic_order(topics: Iterable[str], topic_ids: TopicIds | None, capacity: int) -> list[str]:
    """Topics as a Java hash set of their ids iterates them; without ids, as given."""
    topics = list(topics)
    if topic_ids is None:
        return topics
    return java_order.hash_order(topics, lambda t: java_order.uuid_hash(topic_ids[t]), capacity)


def _range_sorted(members: list[Member]) -> list[Member]:
    """``RangeAssignor.sortMemberIds``: static members first by instance id, then the others by member id."""
    return sorted(members, key=lambda m: (m.group_instance_id is None,
                                          java_order.string_key(m.group_instance_id or m.member_id)))


def broker_range_assign(members: list[Member], partitions: dict[str, int], previous: Assignment | None,
                        topic_ids: TopicIds | None) -> Assignment:
    """Not sticky: contiguous blocks per topic over its subscribers in ``sortMemberIds`` order."""
    return range_blocks(_range_sorted(members), partitions)


def _uniform_homogeneous(order: list[str], topics: list[str], partitions: dict[str, int],
                         previous: Assignment, topic_ids: TopicIds | None) -> Assignment:
    """``UniformHomogeneousAssignmentBuilder.build`` (4.2.0): keep up to the quota, then fill in order."""
    held = {tp for tps in previous.values() for tp in tps}
    unassigned = [(t, p) for t in topics for p in range(partitions[t]) if (t, p) not in held]
    min_quota, extra = divmod(sum(partitions[t] for t in topics), len(order))
    target: Assignment = {}
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(order):
        has_extra = extra > 0
        quota = min_quota + has_extra
        kept = set()
        owned_topics = [t for t in partitions if any(tp[0] == t for tp in previous[member])]
        for topic in topic_order(owned_topics, topic_ids, java_order.grown_capacity(len(owned_topics))):
            owned = java_order.partition_set_order(p for t, p in previous[member] if t == topic)
            keep = owned[:quota]
            unassigned.extend((topic, p) for p in owned[quota:])
            kept.update((topic, p) for p in keep)
            quota -= len(keep)
        if quota > 0 and has_extra and len(order) - index > extra:
            quota, has_extra = quota - 1, False  # give the slot to a member that can fill it
        if quota > 0:
            unfilled.append((member, quota))
        if has_extra:
            extra -= 1
        target[member] = kept
    for member, quota in unfilled:
        target[member].update(unassigned[:quota])
        del unassigned[:quota]
    return target


def uniform_assign(members: list[Member], partitions: dict[str, int], previous: Assignment | None,
                   topic_ids: TopicIds | None) -> Assignment:
    """``UniformAssignor.assign``: the homogeneous builder when all subscriptions are equal, else the
    heterogeneous one."""
    if not members:
        return {}
    order = java_order.member_id_order(m.member_id for m in members)
    claims = valid_claims(members, partitions, previous)
    if len({m.subscription for m in members}) > 1:
        by_id = {m.member_id: m for m in members}
        return uniform_heterogeneous([by_id[i] for i in order], partitions, claims, topic_ids)
    first = next(m for m in members if m.member_id == order[0])
    subscribed = [t for t in partitions if t in first.subscription]
    topics = topic_order(subscribed, topic_ids, java_order.copied_capacity(len(subscribed)))
    if not topics:
        return {m.member_id: set() for m in members}
    return _uniform_homogeneous(order, topics, partitions, claims, topic_ids)
