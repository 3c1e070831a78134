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


# --- the rows the broker's pricing reads (``pipelines.gold.broker_handoffs``): a partition produced at 50
# records a second from time 0, an owner A committing every two seconds, a new owner B


def change(**fields: Any) -> dict[str, Any]:
    """An ownership change row (``ownership_changes``): by default B given partition 0 at 11 s after A,
    asked to revoke at 10 s, acknowledged at 10.2 s (KIP-848)."""
    row = {"group_id": "g", "protocol": "consumer", "topic": "t", "topic_id": "id", "partition": 0,
           "kind": "assigned", "at_ms": 11_000, "owner": "B", "owner_instance_id": None, "previous_owner": "A",
           "previous_instance_id": None, "previous_since_ms": 1_000, "revoke_requested_ms": 10_000,
           "released_ms": 10_200, "release_kind": "revoked", "generation": None, "join_completed_ms": None,
           "member_epoch": 5, "offsets_partition": 0, "offset": 1}
    return {**row, **fields}


def commit(at_ms: int, offset: int | None, partition: int = 0) -> dict[str, Any]:
    """A commit row (``commit_window.commit_rows``) on topic "t"."""
    return {"group_id": "g", "topic": "t", "partition": partition, "committed_offset": offset, "at_ms": at_ms,
            "leader_epoch": -1, "commit_timestamp_ms": at_ms, "offsets_partition": 0, "offset": at_ms}


A_COMMITS = [commit(5_000, 100), commit(7_000, 200), commit(9_000, 300)]
B_COMMITS = [commit(11_500, 300), commit(12_500, 350)]


def log_ends(changes: list[dict], commits: list[dict], every_ms: int | None = None) -> list[dict[str, Any]]:
    """The log ends the pricing asks for (50 records a second: the log end at t ms is t // 20), or
    samples every ``every_ms``."""
    from pipelines.gold.broker_handoffs import LOG_END_FIELDS, log_end_requests

    wanted = log_end_requests(changes, commits) if every_ms is None else [
        ("t", 0, t) for t in range(0, 20_001, every_ms)]
    return [dict(zip(LOG_END_FIELDS, (topic, partition, at, at // 20))) for topic, partition, at in wanted]
