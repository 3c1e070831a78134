"""A classic group's generations, from its ``GroupMetadataValue`` records (plain rows in, plain rows out).

The coordinator writes one record per completed generation, at the leader's SyncGroup (its time
is the sync time; ``currentStateTimestamp`` is when the join phase completed), one when the group
becomes empty, one when a static member is replaced (same generation, new member id), and a
tombstone when the group is deleted. Nothing marks a rebalance's start or reason; a generation
that never completed shows as a gap in the numbers (``failed_rounds``).
"""
from __future__ import annotations

from typing import Any

from pipelines.broker_log.ownership_changes import OwnerBook
from pipelines.vocabulary import ASSIGNORS

GROUP_METADATA = "GroupMetadata"
# What a GroupMetadata record says happened (classic_generations' ``kind``).
GENERATION_KINDS: tuple[str, ...] = ("generation", "empty", "static_replacement", "unchanged", "deleted")
_REBALANCE_PROTOCOL = {a.strategy: a.rebalance_protocol for a in ASSIGNORS if a.group_protocol == "classic"}


def rebalance_protocol(assignor: str | None) -> str | None:
    """eager or cooperative for an assignor the lens declares (``pipelines.vocabulary.ASSIGNORS``);
    None for any other (Java's sticky, a custom one): not guessed."""
    return _REBALANCE_PROTOCOL.get(assignor or "")


def member_row(member: dict[str, Any]) -> dict[str, Any]:
    """One member of a generation: who it is, its timeouts, what it subscribed to and was given."""
    sub, asg = member.get("subscription_decoded") or {}, member.get("assignment_decoded") or {}
    return {"member_id": member["memberId"], "instance_id": member["groupInstanceId"],
            "client_id": member["clientId"], "client_host": member["clientHost"],
            "session_timeout_ms": member["sessionTimeout"],
            "rebalance_timeout_ms": None if member["rebalanceTimeout"] < 0 else member["rebalanceTimeout"],
            "subscribed_topics": sub.get("topics"), "rack_id": sub.get("rackId"),
            "owned_partitions": _topic_partitions(sub.get("ownedPartitions")),
            "subscription_generation": sub.get("generationId"),
            "assigned_partitions": _topic_partitions(asg.get("assignedPartitions"))}


def _topic_partitions(entries: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    return None if entries is None else [{"topic": e["topic"], "partitions": list(e["partitions"])} for e in entries]


def classic_generations(rows: list[dict[str, Any]], previous: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One group's rows (offset order; any record type, the GroupMetadata ones are read) -> one
    row per GroupMetadata record: its generation, members and what changed since the one before
    (``previous``: the generation row a walk that resumes left off at)."""
    out: list[dict[str, Any]] = []
    for row in rows:
        if row["name"] != GROUP_METADATA:
            continue
        generation = generation_row(row, previous)
        out.append(generation)
        previous = None if generation["kind"] == "deleted" else generation
    return out


def generation_row(row: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """One GroupMetadata record's row, against the group's previous generation row (None: none seen)."""
    value = row["value"]
    base = {"group_id": row["group_id"], "offsets_partition": row["offsets_partition"], "offset": row["offset"],
            "synced_ms": row["timestamp_ms"]}
    if value is None:
        return {**base, "kind": "deleted", "generation": None, "protocol_type": None, "assignor": None,
                "rebalance_protocol": None, "leader_id": None, "join_completed_ms": None, "failed_rounds": None,
                "members": [], "joined": [],
                "left": sorted(m["member_id"] for m in (previous or {}).get("members", [])),
                "replaced": []}
    members = [member_row(m) for m in value["members"]]
    before = {m["member_id"]: m for m in (previous or {}).get("members", [])}
    now = {m["member_id"] for m in members}
    replaced = _replacements(before.values(), members)
    generation = value["generation"]
    same = previous is not None and previous["generation"] == generation
    return {**base, "kind": _kind(members, same, replaced), "generation": generation,
            "protocol_type": value["protocolType"], "assignor": value["protocol"],
            "rebalance_protocol": rebalance_protocol(value["protocol"]), "leader_id": value["leader"],
            "join_completed_ms": None if value["currentStateTimestamp"] < 0 else value["currentStateTimestamp"],
            "failed_rounds": None if previous is None or same else max(0, generation - previous["generation"] - 1),
            "members": members, "joined": sorted(now - before.keys() - {r["new_member_id"] for r in replaced}),
            "left": sorted(before.keys() - now - {r["old_member_id"] for r in replaced}), "replaced": replaced}


def _replacements(before, members: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Each static member that came back under a new member id: its old and new ids."""
    old_by_instance = {m["instance_id"]: m["member_id"] for m in before if m["instance_id"]}
    return sorted(({"old_member_id": old_by_instance[m["instance_id"]], "new_member_id": m["member_id"]}
                   for m in members
                   if m["instance_id"] in old_by_instance and old_by_instance[m["instance_id"]] != m["member_id"]),
                  key=lambda r: r["new_member_id"])


def _kind(members: list[dict[str, Any]], same_generation: bool, replaced: list[dict[str, str]]) -> str:
    if not members:
        return "empty"
    if same_generation:
        return "static_replacement" if replaced else "unchanged"
    return "generation"


def classic_ownership_changes(generations: list[dict[str, Any]], book: OwnerBook | None = None) -> list[dict[str, Any]]:
    """The ownership changes of one group's generations (``classic_generations``' rows, in order),
    from ``book`` (the owners a walk that resumes left off at) or from nobody.

    A partition missing from every member's assignment is released at the sync time: revoked
    when its owner is still a member (a cooperative round's first half), removed when the owner
    left. When an eager round (``rebalance_protocol`` eager) gives a partition back to its owner,
    that is a handoff too (``reassigned``): eager members stop everything when a round starts.
    When the release is not logged (eager, or an owner that left), ``released_ms`` is null: the
    owner stopped between ``previous_since_ms`` and ``join_completed_ms``."""
    if not generations:
        return []
    book = book or OwnerBook(generations[0]["group_id"], "classic")
    for gen in generations:
        apply_generation(book, gen)
    return book.rows


def apply_generation(book: OwnerBook, gen: dict[str, Any]) -> None:
    """One generation row's ownership changes, written into ``book``."""
    if gen["kind"] == "unchanged":
        return
    context = {"generation": gen["generation"], "join_completed_ms": gen["join_completed_ms"],
               "offsets_partition": gen["offsets_partition"], "offset": gen["offset"]}
    owners = {(tp["topic"], p): m for m in gen["members"] for tp in m["assigned_partitions"] or []
              for p in tp["partitions"]}
    members = {m["member_id"] for m in gen["members"]}
    for key in sorted(k for k in book.owner if k not in owners):
        kind = "revoked" if book.owner[key].member_id in members else "removed"
        book.release(key, gen["synced_ms"], kind, context)
    if gen["kind"] == "deleted":
        book.released.clear()  # no handoff from one incarnation of the group to the next
    eager = gen["kind"] == "generation" and gen["rebalance_protocol"] == "eager"
    for key, member in sorted(owners.items()):
        book.assign(key, member["member_id"], member["instance_id"], gen["synced_ms"], context, again=eager)
