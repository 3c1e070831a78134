"""The plain data every assignor model reads and returns: members, topic partitions, assignments."""
from __future__ import annotations

from dataclasses import dataclass

TopicPartition = tuple[str, int]
Assignment = dict[str, set[TopicPartition]]  # member id -> the partitions it owns


@dataclass(frozen=True)
class Member:
    """A group member as the assignor sees it: ids and subscribed topic names (not racks)."""

    member_id: str
    group_instance_id: str | None
    subscription: frozenset[str]


def potential_partitions(member: Member, partitions: dict[str, int]) -> list[TopicPartition]:
    """The partitions ``member`` may own: those of the existing topics it subscribes to, in topic order."""
    return [(topic, p) for topic, count in partitions.items() if topic in member.subscription
            for p in range(count)]


def valid_claims(members: list[Member], partitions: dict[str, int],
                 previous: Assignment | None) -> Assignment:
    """``previous`` cut to what a member may keep: current members, subscribed and existing partitions."""
    previous = previous or {}
    return {m.member_id: {tp for tp in previous.get(m.member_id, ())
                          if tp[0] in m.subscription and 0 <= tp[1] < partitions.get(tp[0], 0)}
            for m in members}
