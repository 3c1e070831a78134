"""Per partition, who owned it from when: the ownership changes both group protocols share.

A row per change of a partition's owner, as the broker recorded it: ``released`` (its owner let
it go, or was removed, and nobody holds it yet), ``assigned`` (a new owner; the row carries the
previous owner's release when there was one: a handoff is one row), ``reassigned`` (an eager
classic round took it from its owner and gave it back: a handoff to itself), ``replaced`` (a
static member came back under a new member id and kept it). Times are the coordinator's record
times; ``revoke_requested_ms`` (KIP-848: the owner was asked to revoke it) and ``released_ms``
bracket when the previous owner stopped, ``join_completed_ms`` (classic) is when the round's
join phase ended: the bounds gold prices a handoff from (docs/broker-source.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What an ownership change is (``kind``) and how a previous owner let go (``release_kind``).
CHANGE_KINDS: tuple[str, ...] = ("assigned", "released", "reassigned", "replaced")
RELEASE_KINDS: tuple[str, ...] = ("revoked", "removed", "static_leave")

PartitionKey = tuple[str, int]  # (topic id or, classic, topic name; partition)


@dataclass
class Holding:
    member_id: str
    instance_id: str | None
    since_ms: int


@dataclass
class Release:
    holding: Holding
    released_ms: int
    release_kind: str
    revoke_requested_ms: int | None


class OwnerBook:
    """One group's partitions and their owners, changed record by record; ``rows`` the changes.

    ``context`` names each change's record: offsets_partition, offset, and the protocol's own
    numbers (generation and join_completed_ms, or member_epoch)."""

    def __init__(self, group_id: str, protocol: str, topic_names: dict[str, str] | None = None) -> None:
        self.group_id, self.protocol = group_id, protocol
        self.topic_names = topic_names  # None: keys are topic names (classic); else id -> name
        self.owner: dict[PartitionKey, Holding] = {}
        self.released: dict[PartitionKey, Release] = {}
        self.revoke_requested: dict[PartitionKey, int] = {}
        self.rows: list[dict[str, Any]] = []

    def request_revocation(self, key: PartitionKey, at_ms: int) -> None:
        self.revoke_requested.setdefault(key, at_ms)

    def release(self, key: PartitionKey, at_ms: int, release_kind: str, context: dict[str, Any]) -> None:
        holding = self.owner.pop(key, None)
        if holding is None:
            return
        release = Release(holding, at_ms, release_kind, self.revoke_requested.pop(key, None))
        self.released[key] = release
        self._row(key, "released", at_ms, None, holding, release, context)

    def assign(self, key: PartitionKey, member_id: str, instance_id: str | None, at_ms: int,
               context: dict[str, Any], again: bool = False) -> None:
        """``member_id`` holds ``key`` from ``at_ms``; ``again``: an eager round gave it back to its owner."""
        current = self.owner.get(key)
        if current is not None and current.member_id == member_id and not again:
            return
        release = self.released.pop(key, None)
        previous = current or (release.holding if release else None)
        kind = "assigned"
        if current is not None and current.member_id == member_id:
            kind = "reassigned"
        elif previous is not None and instance_id and previous.instance_id == instance_id:
            kind = "replaced"
        holding = Holding(member_id, instance_id, at_ms)
        self.owner[key] = holding
        self.revoke_requested.pop(key, None)
        self._row(key, kind, at_ms, holding, previous, release, context)

    def holdings_of(self, member_id: str) -> list[PartitionKey]:
        return sorted(k for k, h in self.owner.items() if h.member_id == member_id)

    def taken(self) -> list[dict[str, Any]]:
        """The rows written since the last call (a walk that resumes across runs hands them on as it goes)."""
        rows, self.rows = self.rows, []
        return rows

    def state(self) -> dict[str, Any]:
        """Who holds what, who let what go and who was asked to: plain data (JSON), what ``restored`` takes."""
        return {"owner": [[*k, h.member_id, h.instance_id, h.since_ms] for k, h in sorted(self.owner.items())],
                "released": [[*k, r.holding.member_id, r.holding.instance_id, r.holding.since_ms, r.released_ms,
                              r.release_kind, r.revoke_requested_ms] for k, r in sorted(self.released.items())],
                "revoke_requested": [[*k, at] for k, at in sorted(self.revoke_requested.items())]}

    @classmethod
    def restored(cls, group_id: str, protocol: str, state: dict[str, Any] | None,
                 topic_names: dict[str, str] | None = None) -> OwnerBook:
        """A book as ``state`` left it (None: a new one)."""
        book = cls(group_id, protocol, topic_names)
        for topic, partition, member, instance, since in (state or {}).get("owner", []):
            book.owner[(topic, partition)] = Holding(member, instance, since)
        for topic, partition, member, instance, since, at, kind, asked in (state or {}).get("released", []):
            book.released[(topic, partition)] = Release(Holding(member, instance, since), at, kind, asked)
        for topic, partition, at in (state or {}).get("revoke_requested", []):
            book.revoke_requested[(topic, partition)] = at
        return book

    def _row(self, key: PartitionKey, kind: str, at_ms: int, holding: Holding | None, previous: Holding | None,
             release: Release | None, context: dict[str, Any]) -> None:
        topic, topic_id = (key[0], None) if self.topic_names is None else (self.topic_names.get(key[0]), key[0])
        self.rows.append({
            "group_id": self.group_id, "protocol": self.protocol, "topic": topic, "topic_id": topic_id,
            "partition": key[1], "kind": kind, "at_ms": at_ms,
            "owner": holding.member_id if holding else None,
            "owner_instance_id": holding.instance_id if holding else None,
            "previous_owner": previous.member_id if previous else None,
            "previous_instance_id": previous.instance_id if previous else None,
            "previous_since_ms": previous.since_ms if previous else None,
            "revoke_requested_ms": release.revoke_requested_ms if release else None,
            "released_ms": release.released_ms if release else None,
            "release_kind": release.release_kind if release else None,
            "generation": context.get("generation"), "join_completed_ms": context.get("join_completed_ms"),
            "member_epoch": context.get("member_epoch"),
            "offsets_partition": context["offsets_partition"], "offset": context["offset"]})
