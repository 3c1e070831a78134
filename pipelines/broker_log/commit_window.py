"""The offset commits a handoff's figures need, out of all a group wrote: bounded whatever the commit rate.

A busy group commits every few seconds per partition and rebalances rarely; the bounds read
only the commits around each ownership change (``ownership_changes``): the last before it (where
the next owner starts, and the previous owner's last sign of progress), the first after it and
the first after it that advances past that (the new owner's first progress), the commit that first
reached the last one's offset and the one before it (the previous owner surely still read after
that one: its stop window opens there, and the pair is its rate), plus one checkpoint per partition
and period (the commit rate the bounds interpolate with) and the latest commit (what a later run's
first change is measured from). At most five rows per change, one per period, one more: Burrow's
idea of a bounded window per partition, placed where rebalances are. A commit
carries no member id: the coordinator accepts one only from the current generation or epoch, so
it is the partition's owner's at that time.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

OFFSET_COMMITS = ("OffsetCommit", "LegacyOffsetCommit")
# Why a commit was kept (kept_commits' ``reasons``).
KEEP_REASONS: tuple[str, ...] = ("before_change", "after_change", "first_advance", "last_advance",
                                  "before_last_advance", "checkpoint", "latest", "deleted")
CHECKPOINT_MS = 60_000


def commit_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One group's decoded rows -> its offset commits (a tombstone: the offset deleted or expired)."""
    out = []
    for row in rows:
        if row["name"] not in OFFSET_COMMITS:
            continue
        value = row["value"]
        out.append({"group_id": row["group_id"], "topic": row["key"]["topic"], "partition": row["key"]["partition"],
                    "committed_offset": value["offset"] if value else None,
                    "leader_epoch": value.get("leaderEpoch", -1) if value else None,
                    "commit_timestamp_ms": value["commitTimestamp"] if value else None,
                    "at_ms": row["timestamp_ms"], "offsets_partition": row["offsets_partition"],
                    "offset": row["offset"]})
    return out


def kept_commits(commits: list[dict[str, Any]], changes: list[dict[str, Any]],
                 checkpoint_ms: int = CHECKPOINT_MS) -> list[dict[str, Any]]:
    """The commits to keep (``commit_rows``' rows, each with its ``reasons``), given the group's
    ownership changes (both protocols' rows; a change whose topic id has no name cannot be
    matched to commits, which name topics, and keeps none)."""
    by_partition: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for commit in commits:
        by_partition[(commit["topic"], commit["partition"])].append(commit)
    change_times: dict[tuple[str, int], list[int]] = defaultdict(list)
    for change in changes:
        if change["topic"] is not None:
            change_times[(change["topic"], change["partition"])].append(change["at_ms"])
    kept = []
    for key, partition_commits in sorted(by_partition.items()):
        partition_commits.sort(key=lambda c: (c["at_ms"], c["offset"]))
        reasons = _reasons(partition_commits, sorted(change_times.get(key, [])), checkpoint_ms)
        kept += [{**partition_commits[i], "reasons": sorted(r)} for i, r in sorted(reasons.items())]
    return kept


def last_advance(commits: list[dict[str, Any]], last: int) -> int:
    """The index of the commit that first reached ``commits[last]``'s offset (the commits between
    them repeat it: an idle partition, or a timer that commits what has not moved)."""
    i = last
    while i > 0 and commits[i - 1]["committed_offset"] == commits[last]["committed_offset"]:
        i -= 1
    return i


def _reasons(commits: list[dict[str, Any]], change_times: list[int], checkpoint_ms: int) -> dict[int, set[str]]:
    """index in ``commits`` -> why it is kept."""
    reasons: dict[int, set[str]] = defaultdict(set)
    times = [c["at_ms"] for c in commits]
    for at in change_times:
        i = bisect.bisect_left(times, at)
        start = commits[i - 1]["committed_offset"] if i > 0 else None
        if i > 0:
            reasons[i - 1].add("before_change")
            advance = last_advance(commits, i - 1)
            reasons[advance].add("last_advance")
            if advance > 0:
                reasons[advance - 1].add("before_last_advance")
        if i < len(commits):
            reasons[i].add("after_change")
        for j in range(i, len(commits)):
            offset = commits[j]["committed_offset"]
            if offset is not None and (start is None or offset > start):
                reasons[j].add("first_advance")
                break
    seen_periods: set[int] = set()
    for i, commit in enumerate(commits):
        if commit["committed_offset"] is None:
            reasons[i].add("deleted")
        elif commit["at_ms"] // checkpoint_ms not in seen_periods:
            seen_periods.add(commit["at_ms"] // checkpoint_ms)
            reasons[i].add("checkpoint")
    if commits:
        reasons[len(commits) - 1].add("latest")
    return reasons
