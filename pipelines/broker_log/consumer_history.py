"""A KIP-848 (consumer protocol) group's history, from its records (plain rows in, plain rows out).

The coordinator writes a record for every state change: the group epoch bump
(``ConsumerGroupMetadata``), the target assignment (``...TargetAssignmentMetadata`` and one
``...TargetAssignmentMember`` per member whose target changed), each member's metadata and its
current assignment (``...CurrentMemberAssignment``: a revocation request while UNREVOKED, the
acknowledgement that drops the revoked partitions, the new partitions once released), tombstones
for a member that leaves or is fenced, epoch -2 for a static member's temporary leave and a
replacement under a new member id without an epoch bump. Partitions are named by topic id;
``topic_names`` (``topic_ids``) resolves them, an unknown id keeps a null name.
"""
from __future__ import annotations

from typing import Any

from pipelines.broker_log.classic_history import rebalance_protocol
from pipelines.broker_log.ownership_changes import OwnerBook

# Kafka's modern/MemberState.java: the member state's int8 in CurrentMemberAssignment.
MEMBER_STATES: dict[int, str] = {0: "stable", 1: "unrevoked_partitions", 2: "unreleased_partitions", 127: "unknown"}
STATIC_LEAVE_EPOCH = -2  # a static member's temporary leave (LEAVE_GROUP_STATIC_MEMBER_EPOCH)
# What a record says happened (consumer_events' ``kind``), by record name; a member's assignment
# record is one of the ASSIGNMENT_KINDS.
RECORD_KINDS: dict[str, tuple[str, str]] = {  # name -> (kind of a value, kind of a tombstone)
    "ConsumerGroupMetadata": ("group_epoch", "group_deleted"),
    "ConsumerGroupTargetAssignmentMetadata": ("target_assignment", "target_deleted"),
    "ConsumerGroupTargetAssignmentMember": ("member_target", "member_target_removed"),
    "ConsumerGroupRegularExpression": ("regex_resolved", "regex_removed"),
    "ConsumerGroupPartitionMetadata": ("partition_metadata", "partition_metadata_removed"),
}
MEMBER_KINDS: tuple[str, ...] = ("member_joined", "static_replacement", "subscription_changed", "member_updated",
                                 "member_removed")
ASSIGNMENT_KINDS: tuple[str, ...] = ("static_leave", "revocation_requested", "revocation_acknowledged",
                                     "partitions_assigned", "awaiting_release", "epoch_advanced",
                                     "assignment_removed")
ASSIGNMENT = "ConsumerGroupCurrentMemberAssignment"
MEMBER = "ConsumerGroupMemberMetadata"


def _partitions(entries: list[dict[str, Any]] | None, names: dict[str, str]) -> list[dict[str, Any]]:
    """TopicPartitions entries -> [{topic, topic_id, partitions, assignment_epochs}] (epochs: 4.3+, else null)."""
    return [{"topic": names.get(e["topicId"]), "topic_id": e["topicId"], "partitions": list(e["partitions"]),
             "assignment_epochs": list(e["assignmentEpochs"]) if e.get("assignmentEpochs") else None}
            for e in entries or []]


def _keys(entries: list[dict[str, Any]] | None) -> set[tuple[str, int]]:
    return {(e["topicId"], p) for e in entries or [] for p in e["partitions"]}


def _event(row: dict[str, Any], kind: str, **fields: Any) -> dict[str, Any]:
    value = row["value"] or {}
    base = {"group_id": row["group_id"], "offsets_partition": row["offsets_partition"], "offset": row["offset"],
            "at_ms": row["timestamp_ms"], "kind": kind, "member_id": row["key"].get("memberId"),
            "instance_id": None, "group_epoch": None, "assignment_epoch": None, "assignment_timestamp_ms": None,
            "member_epoch": None, "previous_member_epoch": None, "member_state": None,
            "assigned": None, "pending_revocation": None, "added": None, "removed": None, "target": None,
            "subscribed_topics": None, "subscribed_regex": None, "replaces_member_id": None,
            "client_id": None, "client_host": None, "rebalance_timeout_ms": None, "member_protocol": None}
    if row["name"] == "ConsumerGroupMetadata" and row["value"] is not None:
        base["group_epoch"] = value["epoch"]
    if row["name"] == "ConsumerGroupTargetAssignmentMetadata" and row["value"] is not None:
        base["assignment_epoch"] = value["assignmentEpoch"]
        base["assignment_timestamp_ms"] = value.get("assignmentTimestamp") or None  # KIP-1263, 4.3+
    return {**base, **fields}


def _grouped(keys: set[tuple[str, int]], names: dict[str, str]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[int]] = {}
    for topic_id, partition in sorted(keys):
        by_topic.setdefault(topic_id, []).append(partition)
    return [{"topic": names.get(t), "topic_id": t, "partitions": ps, "assignment_epochs": None}
            for t, ps in by_topic.items()]


class _GroupWalk:
    """The state a consumer group's records are read against: its members' metadata and their
    current assignments; writes events and feeds the ownership book."""

    def __init__(self, group_id: str, names: dict[str, str]) -> None:
        self.names = names
        self.members: dict[str, dict[str, Any]] = {}  # member id -> its MemberMetadata value
        self.assignments: dict[str, dict[str, Any]] = {}  # member id -> its CurrentMemberAssignment value
        self.left_static: dict[str, str] = {}  # instance id -> the member id that left with epoch -2
        self.book = OwnerBook(group_id, "consumer", names)
        self.events: list[dict[str, Any]] = []

    def feed(self, row: dict[str, Any]) -> None:
        if row["name"] == ASSIGNMENT:
            self._assignment(row)
        elif row["name"] == MEMBER:
            self._member(row)
        elif row["name"] in RECORD_KINDS:
            kind = RECORD_KINDS[row["name"]][row["value"] is None]
            target = _partitions(row["value"]["topicPartitions"], self.names) if kind == "member_target" else None
            self.events.append(_event(row, kind, target=target))
            if kind == "group_deleted":  # a group of the same name may come back: it starts over
                self._forget_everyone(row)

    def _forget_everyone(self, row: dict[str, Any]) -> None:
        context = {"offsets_partition": row["offsets_partition"], "offset": row["offset"], "member_epoch": None}
        for key in sorted(self.book.owner):
            self.book.release(key, row["timestamp_ms"], "removed", context)
        self.book.released.clear()  # no handoff from one incarnation of the group to the next
        self.members.clear()
        self.assignments.clear()
        self.left_static.clear()

    def _member(self, row: dict[str, Any]) -> None:
        member_id, value = row["key"]["memberId"], row["value"]
        before = self.members.pop(member_id, None)
        if value is None:
            self.events.append(_event(row, "member_removed", instance_id=(before or {}).get("instanceId"),
                                      client_id=(before or {}).get("clientId"),
                                      client_host=(before or {}).get("clientHost")))
            return
        self.members[member_id] = value
        instance = value["instanceId"]
        replaces = self.left_static.pop(instance, None) if before is None and instance else None
        if before is None:
            kind = "static_replacement" if replaces else "member_joined"
        elif (before["subscribedTopicNames"], before["subscribedTopicRegex"]) != (
                value["subscribedTopicNames"], value["subscribedTopicRegex"]):
            kind = "subscription_changed"
        else:
            kind = "member_updated"
        self.events.append(_event(row, kind, instance_id=instance, subscribed_topics=value["subscribedTopicNames"],
                                  subscribed_regex=value["subscribedTopicRegex"] or None, replaces_member_id=replaces,
                                  client_id=value["clientId"], client_host=value["clientHost"],
                                  rebalance_timeout_ms=value["rebalanceTimeoutMs"],
                                  member_protocol="classic" if value.get("classicMemberMetadata") else "consumer"))

    def _eager_classic(self, member_id: str) -> bool:
        """A member on the classic protocol inside the group whose assignor revokes everything at each rejoin."""
        classic = (self.members.get(member_id) or {}).get("classicMemberMetadata")
        names = [p["name"] for p in (classic or {}).get("supportedProtocols") or []]
        return bool(names) and rebalance_protocol(names[0]) == "eager"

    def _assignment(self, row: dict[str, Any]) -> None:
        member_id, value, at = row["key"]["memberId"], row["value"], row["timestamp_ms"]
        before = self.assignments.pop(member_id, None) or {}
        held = _keys(before.get("assignedPartitions")) | _keys(before.get("partitionsPendingRevocation"))
        instance = (self.members.get(member_id) or {}).get("instanceId")
        context = {"offsets_partition": row["offsets_partition"], "offset": row["offset"],
                   "member_epoch": value["memberEpoch"] if value else None}
        if value is None:
            how = "static_leave" if before.get("memberEpoch") == STATIC_LEAVE_EPOCH else "removed"
            if how == "static_leave" and instance:  # its replacement, if one comes, names the same instance
                self.left_static[instance] = member_id
            for key in sorted(held):
                self.book.release(key, at, how, context)
            self.events.append(_event(row, "assignment_removed", instance_id=instance,
                                      removed=_grouped(held, self.names)))
            return
        self.assignments[member_id] = value
        if before.get("memberEpoch") == STATIC_LEAVE_EPOCH:
            held = set()  # it let its partitions go when it left (below): back under its id, it holds nothing yet
        assigned, pending = _keys(value["assignedPartitions"]), _keys(value["partitionsPendingRevocation"])
        asked = pending - _keys(before.get("partitionsPendingRevocation"))
        released, gained = held - assigned - pending, assigned - held
        if value["memberEpoch"] == STATIC_LEAVE_EPOCH:  # it stopped reading: its partitions wait for it
            for key in sorted(held):
                self.book.release(key, at, "static_leave", context)
            if instance:
                self.left_static[instance] = member_id
        for key in sorted(asked):
            self.book.request_revocation(key, at)
        for key in sorted(released):
            self.book.release(key, at, "revoked", context)
        for key in sorted(gained):
            self.book.assign(key, member_id, instance, at, context)
        if before and value["memberEpoch"] > before.get("memberEpoch", 0) and self._eager_classic(member_id):
            for key in sorted(assigned & held):  # it rejoined: an eager client gave everything back first
                self.book.assign(key, member_id, instance, at, context, again=True)
        self.events.append(_event(
            row, _assignment_kind(value, asked, released, gained), instance_id=instance,
            member_epoch=value["memberEpoch"], previous_member_epoch=value["previousMemberEpoch"],
            member_state=MEMBER_STATES.get(value["state"], "unknown"),
            assigned=_partitions(value["assignedPartitions"], self.names),
            pending_revocation=_partitions(value["partitionsPendingRevocation"], self.names),
            added=_grouped(gained, self.names), removed=_grouped(released, self.names)))


def _assignment_kind(value: dict[str, Any], asked: set, released: set, gained: set) -> str:
    if value["memberEpoch"] == STATIC_LEAVE_EPOCH:
        return "static_leave"
    if asked:
        return "revocation_requested"
    if released:
        return "revocation_acknowledged"
    if gained:
        return "partitions_assigned"
    if MEMBER_STATES.get(value["state"]) == "unreleased_partitions":
        return "awaiting_release"
    return "epoch_advanced"


def _walk(rows: list[dict[str, Any]], topic_names: dict[str, str]) -> _GroupWalk | None:
    walk = None
    for row in rows:
        if row["name"].startswith("ConsumerGroup"):
            walk = walk or _GroupWalk(row["group_id"], topic_names)
            walk.feed(row)
    return walk


def consumer_events(rows: list[dict[str, Any]], topic_names: dict[str, str]) -> list[dict[str, Any]]:
    """One group's rows (offset order) -> one event per consumer-group record: what it says happened."""
    walk = _walk(rows, topic_names)
    return walk.events if walk else []


def consumer_ownership_changes(rows: list[dict[str, Any]], topic_names: dict[str, str]) -> list[dict[str, Any]]:
    """One group's rows (offset order) -> its partitions' ownership changes (``ownership_changes``):
    a revocation request, its acknowledgement and the new owner's assignment, each at its record's time."""
    walk = _walk(rows, topic_names)
    return walk.book.rows if walk else []
