"""Partition ownership intervals: who owned which partition of a group, from when to when.

A fold over one partition's facts in event-time order (``PartitionFold``): each fact is one
partition's share of an event (``facts_of`` cuts events into facts, as the gold stage does in
Spark, ``pipelines.gold.facts``). An interval opens at a ``partitions_assigned`` and closes
at the owner's ``partitions_revoked`` (graceful) or ``partitions_lost``. When another member
is assigned a partition whose owner never released it, the owner crashed (or lost it
without telling): the interval is closed with ``release_kind = "unreleased"`` and no release
time. A ``partitions_lost`` that arrives later from that owner (a zombie noticing) turns it
into ``lost``.

Offsets follow the contract: position and committed are the NEXT offset to read,
``last_processed_offset`` is the last record processed, OFFSET_UNKNOWN (-1001) is unknown.
``first_progress_log_end`` (position + lag at the owner's first progress event) is a
log end offset reached after the owner started: it caps what any earlier owner can
have processed. ``committed_max`` is the highest offset the owner committed for the partition while
it held it and until the next owner's first fetch: with auto-commit librdkafka
commits after the revoke callback, and that commit decides where the next owner starts.
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

from collections.abc import Iterable
from typing import Any

import orjson

from consumer_agent.contract import OFFSET_UNKNOWN, STALE_STATE
from pipelines.catalog import OWNERSHIP

RELEASING = {"partitions_revoked": "revoked", "partitions_lost": "lost"}
CHANGES = ("partitions_assigned", *RELEASING)
# Per-partition facts, most of the telemetry: of these events only the agent, the time,
# the sequence number and the body are read.
PARTITION_FACTS = ("first_fetch", "progress", "commit")
INTERVAL_COLUMNS = OWNERSHIP.column_names()
# One partition's share of an event: the envelope the intervals read, and the body fields
# of its kind (the others null). What the Spark stage builds with the same names.
#
# A progress fact carries what the fold takes from it: records processed, the log end it saw
# (position + lag), the last processed offset and lag, the rate; a commit fact its offset and
# (``first_ms``, ``first_offset``) the earliest commit's time and offset. So a run of progress
# or commit facts can be summed into one fact of the same shape (``pipelines.gold.facts.runs``,
# in Spark) and the Python fold walks the runs, not every event.
FACT_DDL = ("group_id string, topic string, partition bigint, kind string, event_id string, event_time_ms bigint, "
            "agent_id string, seq bigint, member_id string, group_instance_id string, host string, client_id string, "
            "generation bigint, position bigint, last_processed_offset bigint, committed_offset bigint, lag bigint, "
            "processed bigint, log_end bigint, max_rate double, callback_ms double, revoke_committed boolean, "
            "offset bigint, first_ms bigint, first_offset bigint, offset_error string, request_error string, "
            "in_revoke boolean, window_ms double, timestamp_ms bigint, stalled boolean")
FACT_COLUMNS = [c.split(" ")[0] for c in FACT_DDL.split(", ")]


def order(event: dict[str, Any]) -> tuple[int, str, int]:
    """The order every pass reads a group's events and facts in."""
    return event["event_time_ms"], event["agent_id"], event["seq"]


def body_of(event: dict[str, Any]) -> dict[str, Any]:
    """The event's body as a dict. Events read from silver carry it as JSON text, parsed
    here by orjson: the per-group passes parse every body, and json.loads took 2.8 us a
    body against orjson's 0.8."""
    body = event["body"]
    return body if isinstance(body, dict) else orjson.loads(body)


def _known(offset: int | None) -> int | None:
    return None if offset is None or offset == OFFSET_UNKNOWN else offset


def log_end(position: int | None, lag: int | None) -> int | None:
    """The log end a progress entry saw (position + lag), when both are known (a position of 0
    counts as unknown, as the per-event reference has it)."""
    return position + lag if lag is not None and _known(position) else None


def facts_of(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One group's events (envelope and ``body``) as per-partition facts, in order; a
    progress fact is ``stalled`` when its agent moved to the stale state and has not been
    assigned, revoked or lost anything since."""
    out: list[dict[str, Any]] = []
    stalled: set[str] = set()
    for e in sorted(events, key=order):
        kind, agent = e["kind"], e["agent_id"]
        if kind not in CHANGES and kind not in PARTITION_FACTS:
            if kind == "state_transition" and body_of(e)["to_state"] == STALE_STATE:
                stalled.add(agent)
            continue
        body = body_of(e)
        base = dict.fromkeys(FACT_COLUMNS)
        base.update({c: e[c] for c in ("group_id", "kind", "event_id", "event_time_ms", "agent_id", "seq",
                                       "member_id", "group_instance_id", "host", "client_id", "generation")})
        if kind in CHANGES:
            stalled.discard(agent)
            cor = body.get("commit_on_revoke") or {}
            out.extend({**base, "topic": ps["topic"], "partition": ps["partition"], "position": ps["position"],
                        "last_processed_offset": ps["last_processed_offset"],
                        "committed_offset": ps["committed_offset"], "callback_ms": body["callback_ms"],
                        "revoke_committed": bool(cor.get("committed"))} for ps in body["partitions"])
        elif kind == "first_fetch":  # (.get: lakes written before the two fields)
            out.append({**base, "topic": body["topic"], "partition": body["partition"], "offset": body["offset"],
                        "window_ms": body.get("window_ms"), "timestamp_ms": body.get("timestamp_ms")})
        elif kind == "progress":
            seconds = body["interval_ms"] / 1000.0
            out.extend({**base, "topic": ps["topic"], "partition": ps["partition"], "position": ps["position"],
                        "last_processed_offset": ps["last_processed_offset"], "lag": ps["lag"],
                        "processed": ps["processed"], "log_end": log_end(ps["position"], ps["lag"]),
                        "max_rate": ps["processed"] / seconds if seconds > 0 else None, "stalled": agent in stalled}
                       for ps in body["partitions"])
        else:
            out.extend({**base, "topic": o["topic"], "partition": o["partition"], "offset": o["offset"],
                        "first_ms": e["event_time_ms"], "first_offset": o["offset"], "offset_error": o["error"],
                        "request_error": body["error"], "in_revoke": body["in_revoke"]}
                       for o in body["offsets"])
    return out


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
        kind, agent, t = f["kind"], f["agent_id"], f["event_time_ms"]
        i, row = self._latest(agent)
        if kind == "partitions_assigned":
            before = self.intervals[-1] if self.intervals else None
            if before is not None:
                if before["release_kind"] is None:
                    before["release_kind"] = "unreleased"
                before["next_assigned_ms"] = t
            opened = dict.fromkeys(INTERVAL_COLUMNS)
            opened.update({c: f[c] for c in ("group_id", "topic", "partition", "agent_id", "member_id",
                                              "group_instance_id", "host", "client_id", "generation")})
            opened.update(assign_event_id=f["event_id"], assigned_ms=t, processed=0, commit_in_revoke=False)
            self.intervals.append(opened)
            self.latest_of[agent] = len(self.intervals) - 1
        elif row is None:
            return
        elif kind in RELEASING:
            if row["release_kind"] in (None, "unreleased"):
                row.update(release_kind=RELEASING[kind], release_event_id=f["event_id"], released_ms=t,
                           callback_ms=f["callback_ms"], commit_in_revoke=bool(f["revoke_committed"]),
                           position_at_release=_known(f["position"]),
                           last_processed_at_release=_known(f["last_processed_offset"]),
                           committed_at_release=_known(f["committed_offset"]))
        elif kind == "first_fetch":
            if row["first_fetch_ms"] is None:
                row.update(first_fetch_ms=t, first_fetch_offset=_known(f["offset"]),
                           first_fetch_window_ms=f["window_ms"] or 0.0, first_fetch_timestamp_ms=f["timestamp_ms"])
                if i > 0:
                    self.intervals[i - 1]["next_first_fetch_ms"] = t
        elif kind == "progress":
            if f["stalled"]:  # a stalled member's progress is not its owner's
                return
            row["processed"] += f["processed"]
            if row["first_progress_log_end"] is None:
                row["first_progress_log_end"] = f["log_end"]
            row.update(last_progress_ms=t, last_progress_processed_offset=_known(f["last_processed_offset"]),
                       last_progress_lag=f["lag"])
            if f["max_rate"] is not None:
                row["max_rate_per_s"] = max(row["max_rate_per_s"] or 0.0, f["max_rate"])
        elif (kind == "commit" and f["request_error"] is None and f["offset_error"] is None
              and _known(f["offset"]) is not None):
            # Counts until the next owner's first fetch. Facts come in order, so a later one has
            # not happened; an earlier one came before every commit of a run (a first fetch ends
            # a run), so of a run only the commits at that very millisecond count.
            nxt = self.intervals[i + 1] if i + 1 < len(self.intervals) else None
            deadline = None if nxt is None else nxt["first_fetch_ms"]
            counted = (f["offset"] if deadline is None or t <= deadline
                       else f["first_offset"] if f["first_ms"] <= deadline else None)
            if counted is not None:
                row["committed_max"] = max(row["committed_max"] if row["committed_max"] is not None
                                           else OFFSET_UNKNOWN, counted)
            if f["in_revoke"]:
                row["commit_in_revoke"] = True

    def state(self) -> dict[str, Any] | None:
        """What a later fold needs (None: nothing): the intervals from the earliest one a later
        fact can change (each agent's latest) on, and before it those whose handoff a later
        first fetch can still decide (an unread next owner's reader is the first later owner
        that reads), with one more: the previous owner of the first of them."""
        if not self.latest_of:
            return None
        first = min(self.latest_of.values())
        while first > 0 and self.intervals[first - 1]["first_fetch_ms"] is None:
            first -= 1
        first = max(0, first - 1)
        return {"intervals": self.intervals[first:],
                "latest_of": {agent: i - first for agent, i in self.latest_of.items()}}


def ownership_intervals(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ownership intervals of one group. ``events`` carry the envelope and ``body`` (dict or JSON text)."""
    folds: dict[tuple[str, int], PartitionFold] = {}
    for f in facts_of(events):
        folds.setdefault((f["topic"], f["partition"]), PartitionFold()).feed(f)
    return [row for fold in folds.values() for row in fold.intervals]
