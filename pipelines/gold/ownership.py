"""Partition ownership intervals: who owned which partition of a group, from when to when.

A fold over one partition's facts in event-time order (``PartitionFold``): each fact is one
partition's share of an event, cut from the events in Spark (``pipelines.gold.facts``, the one
place events become facts; ``FACT_DDL`` there is their shape). An interval opens at a
``partitions_assigned`` and closes at the owner's ``partitions_revoked`` (graceful) or
``partitions_lost``. When another member
is assigned a partition whose owner never released it, the owner crashed (or lost it
without telling): the interval is closed with ``release_kind = "unreleased"`` and no release
time. A ``partitions_lost`` that arrives later from that owner (a zombie noticing) turns it
into ``lost``.

Offsets follow the contract: position and committed are the NEXT offset to read,
``last_processed_offset`` is the last record processed, OFFSET_UNKNOWN (-1001) is unknown.
``first_progress_log_end`` (position + lag at the owner's first progress event that had
both, at ``first_progress_log_end_ms``) is a log end offset reached after the owner started:
it caps what any earlier owner can have processed; with the log end at the last progress it
says how fast the log grew. ``last_progress_position`` is the position at the owner's last progress (the
records handed out by then), ``max_progress_interval_ms`` the longest time it took between two of
its ticks where the later was its timer's (a tick at a first record or after a poll gap comes
early: it says nothing of how late the timer's ticks come) and ``progress_due_ms`` the interval the
agent promised (its ``lens.progress.interval.ms``): a crashed owner's silence is measured against
them (``pipelines.gold.handoffs``); ``last_record_after_ms`` is the tick before the last one that
counted records processed (handed out, in the default processing mode): its last record came
later. ``committed_max`` is the highest offset the owner committed for the partition while it held
it and until the next owner's first fetch (``last_commit_ms``: its last such commit, a sign it was
alive): with auto-commit librdkafka commits after the revoke callback, and that commit decides where
the next owner starts.
``handed_out_at_release`` is the agent's word at the release: whether a poll handed out any
record of the partition since the assignment (null: older agents, or the agent could not tell).
``uncommitted_sum`` over ``uncommitted_samples``: the records processed but not committed,
on average over the owner's progress ticks (what the what-if's uncommitted window is read from).
A member that stalled past ``max.poll.interval.ms`` (moved to the stale state) no longer
owns its partitions: progress it reports before its lost callback is not its owner's last
progress (the lost handoff's pause is bounded by the last progress before the stall); a
progress fact carries ``stalled``, decided from its agent's own events.

Why per partition, and resumable: nothing but the stall crosses partitions, so a large group
spreads over many tasks, and the fold's state (``PartitionFold.state``: the intervals that
later facts can still change, and those before them that their handoffs read) is small, so
an incremental run starts from it rather than from the partition's history.
"""
from __future__ import annotations

from typing import Any

from consumer_agent.contract import OFFSET_UNKNOWN
from pipelines.catalog import OWNERSHIP

RELEASING = {"partitions_revoked": "revoked", "partitions_lost": "lost"}
CHANGES = ("partitions_assigned", *RELEASING)
INTERVAL_COLUMNS = OWNERSHIP.column_names()
# How long after its release an owner's interval is taken as final (``PartitionFold._settled``): longer
# than any progress tick it could still have sent of the partition.
SETTLED_AFTER_MS = 60_000


def _known(offset: int | None) -> int | None:
    return None if offset is None or offset == OFFSET_UNKNOWN else offset


def _released(row: dict[str, Any], f: dict[str, Any]) -> None:
    """The owner's revoke or lost callback closes its interval (a lost one after an unreleased close too)."""
    if row["release_kind"] in (None, "unreleased"):
        row.update(release_kind=RELEASING[f["kind"]], release_event_id=f["event_id"], released_ms=f["event_time_ms"],
                   callback_ms=f["callback_ms"], commit_in_revoke=bool(f["revoke_committed"]),
                   position_at_release=_known(f["position"]),
                   last_processed_at_release=_known(f["last_processed_offset"]),
                   committed_at_release=_known(f["committed_offset"]), handed_out_at_release=f["handed_out"])


def _progress(row: dict[str, Any], f: dict[str, Any]) -> None:
    """A progress fact of the owner's: records processed, the log end, rates and the uncommitted window."""
    if f["stalled"]:  # a stalled member's progress is not its owner's
        return
    row["processed"] += f["processed"]
    if row["first_progress_log_end"] is None and f["log_end"] is not None:
        row.update(first_progress_log_end=f["log_end"], first_progress_log_end_ms=f["first_ms"])
    row.update(last_progress_ms=f["event_time_ms"], last_progress_processed_offset=_known(f["last_processed_offset"]),
               last_progress_lag=f["lag"], last_progress_position=_known(f["position"]))
    if f["max_rate"] is not None:
        row["max_rate_per_s"] = max(row["max_rate_per_s"] or 0.0, f["max_rate"])
    if f["timer_interval_ms"] is not None:  # .get: a state kept before the column
        row["max_progress_interval_ms"] = max(row.get("max_progress_interval_ms") or 0.0, f["timer_interval_ms"])
    if f["next_due_ms"] is not None:
        row["progress_due_ms"] = max(row.get("progress_due_ms") or 0.0, f["next_due_ms"])
    if f["moved_ms"] is not None:
        row["last_record_after_ms"] = max(row.get("last_record_after_ms") or f["moved_ms"], f["moved_ms"])
    if f["uncommitted_samples"]:  # .get: a state kept before the columns
        row["uncommitted_sum"] = (row.get("uncommitted_sum") or 0) + f["uncommitted"]
        row["uncommitted_samples"] = (row.get("uncommitted_samples") or 0) + f["uncommitted_samples"]


class PartitionFold:
    """One partition's ownership intervals, fed its facts in order (``feed``), resumable from
    ``state()``: a fold restored from the state of another, fed the facts that came after,
    ends with the same intervals from the state's first on."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.intervals: list[dict[str, Any]] = [dict(r) for r in state["intervals"]] if state else []
        self.latest_of: dict[str, int] = dict(state["latest_of"]) if state else {}  # agent -> its latest interval

    def _latest(self, agent: str) -> tuple[int, dict[str, Any] | None]:
        i = self.latest_of.get(agent, -1)
        return i, (self.intervals[i] if i >= 0 else None)

    def feed(self, f: dict[str, Any]) -> None:
        kind, agent = f["kind"], f["agent_id"]
        if kind == "partitions_assigned":
            self._assigned(f)
            return
        i, row = self._latest(agent)
        if row is None:
            return
        if kind in RELEASING:
            _released(row, f)
        elif kind == "first_fetch":
            self._first_fetch(i, row, f)
        elif kind == "progress":
            _progress(row, f)
        elif kind == "commit":
            self._commit(i, row, f)

    def _assigned(self, f: dict[str, Any]) -> None:
        """A new interval opens; the partition's previous one, if still open, was never released."""
        t = f["event_time_ms"]
        before = self.intervals[-1] if self.intervals else None
        if before is not None:
            if before["release_kind"] is None:
                before["release_kind"] = "unreleased"
            before["next_assigned_ms"] = t
        opened = dict.fromkeys(INTERVAL_COLUMNS)
        opened.update({c: f[c] for c in ("cluster_id", "group_id", "topic", "partition", "agent_id", "member_id",
                                          "group_instance_id", "host", "client_id", "generation")})
        opened.update(assign_event_id=f["event_id"], assigned_ms=t, processed=0, commit_in_revoke=False)
        self.intervals.append(opened)
        self.latest_of[f["agent_id"]] = len(self.intervals) - 1

    def _first_fetch(self, i: int, row: dict[str, Any], f: dict[str, Any]) -> None:
        """The owner's first fetch of interval ``i`` (``row``), which the previous interval's handoff ends at."""
        if row["first_fetch_ms"] is None:
            t = f["event_time_ms"]
            row.update(first_fetch_ms=t, first_fetch_offset=_known(f["offset"]),
                       first_fetch_window_ms=f["window_ms"] or 0.0, first_fetch_timestamp_ms=f["timestamp_ms"])
            if i > 0:
                self.intervals[i - 1]["next_first_fetch_ms"] = t

    def _commit(self, i: int, row: dict[str, Any], f: dict[str, Any]) -> None:
        """A successful commit by interval ``i``'s owner (``row``); a failed one, or one of no known offset, counts not.

        Counts until the next owner's first fetch. Facts come in order, so a later one has
        not happened; an earlier one came before every commit of a run (a first fetch ends
        a run), so of a run only the commits at that very millisecond count."""
        if f["request_error"] is not None or f["offset_error"] is not None or _known(f["offset"]) is None:
            return
        t = f["event_time_ms"]
        nxt = self.intervals[i + 1] if i + 1 < len(self.intervals) else None
        deadline = None if nxt is None else nxt["first_fetch_ms"]
        counted = (f["offset"] if deadline is None or t <= deadline
                   else f["first_offset"] if f["first_ms"] <= deadline else None)
        if counted is None:
            return  # after the next owner read: not this interval's commit, in a revoke or not
        row["committed_max"] = max(row["committed_max"] if row["committed_max"] is not None
                                   else OFFSET_UNKNOWN, counted)
        at = t if counted == f["offset"] else f["first_ms"]
        row["last_commit_ms"] = max(row.get("last_commit_ms") or at, at)  # .get: a state kept before it
        if f["in_revoke"]:
            row["commit_in_revoke"] = True

    def _settled(self, i: int, at_ms: int) -> bool:
        """Interval ``i`` is final for every fact from ``at_ms`` on: its owner released it (a revoke or
        lost callback, which nothing later overwrites) at least ``SETTLED_AFTER_MS`` before, and the
        next owner read before ``at_ms``, so its owner's later commits count for nothing (``_commit``);
        an owner reports progress and fetches only for partitions it holds."""
        row, nxt = self.intervals[i], self.intervals[i + 1] if i + 1 < len(self.intervals) else None
        return (nxt is not None and nxt["first_fetch_ms"] is not None and nxt["first_fetch_ms"] < at_ms
                and row["release_kind"] in RELEASING.values() and row["released_ms"] <= at_ms - SETTLED_AFTER_MS)

    def state(self, at_ms: int) -> dict[str, Any] | None:
        """What a fold of the facts from ``at_ms`` on needs (None: nothing): the intervals from the
        earliest one a later fact can change (each agent's latest, unless ``_settled``) on, and
        before it those whose handoff a later first fetch can still decide (an unread next owner's
        reader is the first later owner that reads), with one more: the previous owner of the first
        of them. A settled agent is forgotten, so the state holds the partition's recent intervals,
        not every owner it ever had (an eager group's 60 owners reached back over its whole history)."""
        live = {agent: i for agent, i in self.latest_of.items() if not self._settled(i, at_ms)}
        if not live:
            return None
        first = min(live.values())
        while first > 0 and self.intervals[first - 1]["first_fetch_ms"] is None:
            first -= 1
        first = max(0, first - 1)
        return {"intervals": self.intervals[first:],
                "latest_of": {agent: i - first for agent, i in live.items()}}
