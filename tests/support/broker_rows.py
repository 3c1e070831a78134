"""Decoded ``__consumer_offsets`` rows made by hand (``records.record_row``'s shape): a classic group's
``GroupMetadata`` records and a consumer group's records, for the history and pricing rules' tests."""
from __future__ import annotations

from typing import Any


def member(member_id: str, partitions: list[int], instance: str | None = None, client: str = "c",
           topics: tuple[str, ...] = ("t",), session_ms: int = 45000) -> dict[str, Any]:
    """A classic member with its decoded subscription and assignment (all of topic "t")."""
    return {"memberId": member_id, "groupInstanceId": instance, "clientId": client, "clientHost": "/h",
            "rebalanceTimeout": 300000, "sessionTimeout": session_ms, "subscription": b"", "assignment": b"",
            "subscription_decoded": {"version": 3, "topics": list(topics), "userData": None, "ownedPartitions": [],
                                     "generationId": -1, "rackId": None},
            "assignment_decoded": {"version": 3, "assignedPartitions": [{"topic": "t", "partitions": partitions}],
                                   "userData": None}}


def generation(offset: int, at: int, number: int, members: list[dict], protocol: str = "range") -> dict[str, Any]:
    """A ``GroupMetadata`` record of generation ``number`` synced at ``at`` (joined 5 ms before); a
    negative number: the group's tombstone."""
    value = None if number < 0 else {"protocolType": "consumer", "generation": number, "protocol": protocol,
                                     "leader": "a", "currentStateTimestamp": at - 5, "members": members}
    return {"group_id": "g", "record_type": 2, "name": "GroupMetadata", "key": {"group": "g"}, "version": 3,
            "value": value, "offsets_partition": 0, "offset": offset, "timestamp_ms": at}


def consumer_row(offset: int, at: int, name: str, key: dict, value: dict | None) -> dict[str, Any]:
    return {"group_id": "g", "record_type": 0, "name": name, "key": {"groupId": "g", **key}, "version": 0,
            "value": value, "offsets_partition": 0, "offset": offset, "timestamp_ms": at}


def assignment(epoch: int, assigned: list[int], pending: list[int] = (), state: int = 0) -> dict[str, Any]:
    """A ``ConsumerGroupCurrentMemberAssignment`` value of topic id "T"."""
    return {"memberEpoch": epoch, "previousMemberEpoch": epoch - 1, "state": state,
            "assignedPartitions": [{"topicId": "T", "partitions": list(assigned)}],
            "partitionsPendingRevocation": [{"topicId": "T", "partitions": list(pending)}] if pending else []}


def member_metadata(client: str = "c", topics: tuple[str, ...] = ("t",), rebalance_timeout_ms: int = 10_000,
                    instance: str | None = None) -> dict[str, Any]:
    """A ``ConsumerGroupMemberMetadata`` value of a member on the consumer protocol."""
    return {"instanceId": instance, "rackId": None, "clientId": client, "clientHost": "/h",
            "subscribedTopicNames": list(topics), "subscribedTopicRegex": "",
            "rebalanceTimeoutMs": rebalance_timeout_ms, "serverAssignor": None, "classicMemberMetadata": None}
