"""librdkafka's eager classic-protocol assignors, ``range`` and ``roundrobin``, without racks.

Both are stateless: the result depends only on member ids (or instance ids) and
subscriptions, never on the previous assignment. Members are sorted by
``rd_kafka_group_member_cmp`` (``rdkafka_assignor.c``): by ``group.instance.id`` when both
members are static, else by member id, as bytes. With static and dynamic members mixed
that comparison is not transitive and librdkafka's qsort order is undefined; we sort the
caller's (JoinGroup) order with the same comparison.
"""
from __future__ import annotations

from functools import cmp_to_key

from pipelines.simulator.group import Assignment, Member


def _bytes_cmp(a: str, b: str) -> int:
    """``rd_kafkap_str_cmp``: memcmp, then the shorter first."""
    x, y = a.encode(), b.encode()
    return (x > y) - (x < y)


def _member_cmp(a: Member, b: Member) -> int:
    if a.group_instance_id is not None and b.group_instance_id is not None:
        return _bytes_cmp(a.group_instance_id, b.group_instance_id)
    return _bytes_cmp(a.member_id, b.member_id)


def sorted_members(members: list[Member]) -> list[Member]:
    return sorted(members, key=cmp_to_key(_member_cmp))


def _eligible_topics(members: list[Member], partitions: dict[str, int]) -> list[str]:
    """Topics that exist and that some member subscribes to, sorted by name (strcmp) as roundrobin does."""
    return sorted((t for t in partitions if any(t in m.subscription for m in members)),
                  key=str.encode)


def range_blocks(ordered: list[Member], partitions: dict[str, int]) -> Assignment:
    """Range over members already in assignor order: per topic, contiguous blocks to its
    subscribers in that order, the first ``P % N`` of them one partition more."""
    result: Assignment = {m.member_id: set() for m in ordered}
    for topic, count in partitions.items():
        subscribers = [m for m in ordered if topic in m.subscription]
        if not subscribers:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for i, member in enumerate(subscribers):
            size = quota + (i < extra)
            result[member.member_id].update((topic, p) for p in range(start, start + size))
            start += size
    return result


def range_assign(members: list[Member], partitions: dict[str, int],
                 previous: Assignment | None) -> Assignment:
    """``rd_kafka_range_assignor_assign_cb`` without racks (the co-partition pass assigns nothing):
    range blocks per topic over each topic's subscribers sorted by ``rd_kafka_group_member_cmp``."""
    return range_blocks(sorted_members(members), partitions)


def roundrobin_assign(members: list[Member], partitions: dict[str, int],
                      previous: Assignment | None) -> Assignment:
    """``rd_kafka_roundrobin_assignor_assign_cb``: topics by name, partitions ascending, each to the
    next subscribed member of one cursor over the sorted members, never reset between topics."""
    ordered = sorted_members(members)
    result: Assignment = {m.member_id: set() for m in members}
    cursor = -1
    for topic in _eligible_topics(members, partitions):
        for p in range(partitions[topic]):
            cursor = (cursor + 1) % len(ordered)
            while topic not in ordered[cursor].subscription:
                cursor = (cursor + 1) % len(ordered)
            result[ordered[cursor].member_id].add((topic, p))
    return result
