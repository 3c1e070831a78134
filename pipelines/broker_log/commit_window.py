"""The offset commits a handoff's figures need, out of all a group wrote: a fixed number per
ownership change, whatever the commit rate.

A busy group commits every few seconds per partition and rebalances rarely; the bounds read
only the commits around each ownership change (``ownership_changes``): the last before it (where
the next owner starts, and the previous owner's last sign of progress), the first after it and
the first after it that advances past that (the new owner's first progress), the commit that first
reached the last one's offset and the one before it (the previous owner surely still read after
that one: its stop window opens there, and the pair is its rate), and checkpoints: the last commit
of each of the ``CHECKPOINTS`` periods (``CHECKPOINT_MS``) before it, the previous owner's commit
rate the bounds interpolate with. At most ``KEPT_PER_CHANGE`` rows per change, and one per deleted
(expired) offset: Burrow's idea of a bounded window per partition, placed where rebalances are. A
commit carries no member id: the coordinator accepts one only from the current generation or epoch,
so it is the partition's owner's at that time.

``CommitKeeper`` reads a group's commits and changes one at a time in log order and carries per
partition only what a later change or commit needs (the last commit, the one that first reached its
offset and the one before that, one per recent period, the changes still waiting for a first
commit): a walk that stops after any record and resumes from its ``state`` keeps the same commits.
A commit kept again later (a change's ``after_change`` that becomes the next one's
``before_change``) comes out again with its new reasons: a reader merges the reasons of one commit
(its ``offsets_partition`` and ``offset``).
"""
from __future__ import annotations

from typing import Any

OFFSET_COMMITS = ("OffsetCommit", "LegacyOffsetCommit")
# Why a commit was kept (kept_commits' ``reasons``).
KEEP_REASONS: tuple[str, ...] = ("before_change", "after_change", "first_advance", "last_advance",
                                  "before_last_advance", "checkpoint", "deleted")
CHECKPOINT_MS = 60_000
CHECKPOINTS = 4
# The reasons that keep a commit for the change after it, and those for the change before it.
KEPT_BEFORE = ("before_change", "last_advance", "before_last_advance", "checkpoint")
KEPT_AFTER = ("after_change", "first_advance")
KEPT_PER_CHANGE = 5 + CHECKPOINTS  # the most one change keeps: one commit per reason, a checkpoint per period


def commit_row(row: dict[str, Any]) -> dict[str, Any]:
    """One decoded offset commit record (a tombstone: the offset deleted or expired) as a commit row."""
    value = row["value"]
    return {"group_id": row["group_id"], "topic": row["key"]["topic"], "partition": row["key"]["partition"],
            "committed_offset": value["offset"] if value else None,
            "leader_epoch": value.get("leaderEpoch", -1) if value else None,
            "commit_timestamp_ms": value["commitTimestamp"] if value else None,
            "at_ms": row["timestamp_ms"], "offsets_partition": row["offsets_partition"], "offset": row["offset"]}


def commit_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One group's decoded rows -> its offset commits."""
    return [commit_row(row) for row in rows if row["name"] in OFFSET_COMMITS]


def _kept(commit: dict[str, Any], *reasons: str) -> dict[str, Any]:
    return {**commit, "reasons": sorted(set(reasons))}


class CommitKeeper:
    """One group's commits to keep, fed in log order (``commit`` and ``change`` return the rows
    kept by that record); ``state`` is what it carries, as plain data."""

    def __init__(self, state: dict[str, Any] | None = None, checkpoint_ms: int = CHECKPOINT_MS,
                 checkpoints: int = CHECKPOINTS) -> None:
        self.checkpoint_ms, self.checkpoints = checkpoint_ms, checkpoints
        # "partition/topic" -> {"last": commit, "ring": [a commit per period], "after": bool, "starts": [offsets],
        #     "advance": the commit that first reached last's offset, "before_advance": the one before it}
        self.partitions: dict[str, dict[str, Any]] = dict(state or {})

    def state(self) -> dict[str, Any]:
        return self.partitions

    def _partition(self, topic: str, partition: int) -> dict[str, Any]:
        return self.partitions.setdefault(f"{partition}/{topic}", {"last": None, "ring": [], "after": False,
                                                                   "starts": []})

    def commit(self, commit: dict[str, Any]) -> list[dict[str, Any]]:
        """A commit: kept when a change waits for it, or deleted."""
        part = self._partition(commit["topic"], commit["partition"])
        offset, reasons = commit["committed_offset"], []
        if offset is None:
            reasons.append("deleted")
        if part["after"]:
            reasons.append("after_change")
            part["after"] = False
        if offset is not None and part["starts"]:
            waiting = [s for s in part["starts"] if s is None or offset > s]
            if waiting:
                reasons.append("first_advance")
                part["starts"] = [s for s in part["starts"] if s not in waiting]
        last = part["last"]
        if last is None or last["committed_offset"] != offset:  # a repeated offset keeps its first commit
            part["advance"], part["before_advance"] = commit, last
        if offset is not None:
            ring = part["ring"]
            if ring and ring[-1]["at_ms"] // self.checkpoint_ms == commit["at_ms"] // self.checkpoint_ms:
                ring[-1] = commit
            else:
                ring.append(commit)
                del ring[:-self.checkpoints]
        part["last"] = commit
        return [_kept(commit, *reasons)] if reasons else []

    def change(self, change: dict[str, Any]) -> list[dict[str, Any]]:
        """An ownership change of a partition: the commits before it are kept now, the ones after
        it when they come. A change whose topic has no name (an unresolved topic id) keeps none."""
        if change["topic"] is None:
            return []
        part = self._partition(change["topic"], change["partition"])
        last = part["last"]
        kept: dict[int, dict[str, Any]] = {c["offset"]: _kept(c, "checkpoint") for c in part["ring"]}
        for commit, reason in ((last, "before_change"), (part.get("advance"), "last_advance"),
                               (part.get("before_advance"), "before_last_advance")):
            if commit is not None:
                kept[commit["offset"]] = _kept(commit, reason, *kept.get(commit["offset"], {}).get("reasons", []))
        part["ring"] = []
        part["after"] = True
        start = last["committed_offset"] if last is not None else None
        if start not in part["starts"]:
            part["starts"].append(start)
        return [kept[o] for o in sorted(kept)]


def last_advance(commits: list[dict[str, Any]], last: int) -> int:
    """The index of the commit that first reached ``commits[last]``'s offset (the commits between
    them repeat it: an idle partition, or a timer that commits what has not moved)."""
    i = last
    while i > 0 and commits[i - 1]["committed_offset"] == commits[last]["committed_offset"]:
        i -= 1
    return i


def merged(kept: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kept rows of the same commit as one row with every reason, in log order."""
    by_place: dict[tuple[int, int], dict[str, Any]] = {}
    for row in kept:
        place = (row["offsets_partition"], row["offset"])
        known = by_place.get(place)
        by_place[place] = row if known is None else {**row, "reasons": sorted({*known["reasons"], *row["reasons"]})}
    return [by_place[p] for p in sorted(by_place)]


def kept_commits(commits: list[dict[str, Any]], changes: list[dict[str, Any]],
                 checkpoint_ms: int = CHECKPOINT_MS) -> list[dict[str, Any]]:
    """The commits to keep (``commit_rows``' rows, each with its ``reasons``), given the group's
    ownership changes (both protocols' rows), all read in log order (``offsets_partition``,
    ``offset``; a change's offset is its record's)."""
    keeper = CommitKeeper(checkpoint_ms=checkpoint_ms)
    order = sorted([(c["offsets_partition"], c["offset"], 1, i) for i, c in enumerate(commits)]
                   + [(c["offsets_partition"], c["offset"], 0, i) for i, c in enumerate(changes)])
    kept = []
    for _, _, is_commit, i in order:
        kept += keeper.commit(commits[i]) if is_commit else keeper.change(changes[i])
    return merged(kept)
