"""Partition handoffs: one partition passing from one owner to the next, and what it cost.

A handoff pairs an ownership interval with the next interval of the same partition.
The previous owner may equal the next one (an eager revoke-all then re-assign is still
a handoff with its own pause).

Graceful (``revoked``) and ``lost`` handoffs carry the previous owner's offsets at the
release, so the duplicates are exact:

- ``duplicates`` = max(0, last_processed + 1 - next first_fetch offset), read again by the new owner;
- ``uncommitted_at_revoke`` = max(0, last_processed + 1 - committed), with committed the
  highest offset the previous owner committed before the handoff (the revoke body's
  committed offset or a later commit, e.g. librdkafka's auto-commit after the callback).

Figures follow ``pipelines.measures``: each column is what surely happened (the exact
figure, else its lower bound: ``point_figure``), ``_upper`` the most it can have been.

The pause (``pause_s``) of a graceful handoff = next owner's first_fetch time - revoke time,
counting only time in which a record was waiting (every bound below too): if the first
record read after the handoff (its Kafka timestamp T, carried by first_fetch) was
produced after the revoke, the pause starts at T; if after the reader's assignment,
nothing waited on the handoff and the pause is 0 (an idle partition on a quiet topic does
not pause until its next record arrives; its owner reads it as fast as ever).

A first record the agent found at a progress tick (its record-by-record watch had ended,
``first_fetch.seen`` false) was handed out within ``window_ms`` before the event: the
pause has bounds [event - window - start, event - start] and no exact figure; its offset
is the group's committed offset the fetch started from, or unknown (then the duplicates
are bounded by [0, uncommitted_at_revoke]: the new owner starts at or after the last commit seen).

A crashed owner (``unreleased``: never released, found when someone else was assigned
the partition) left no offsets, only its last progress event (time t_p, last processed
L_p, fastest rate r seen). The group detected the loss at the next assignment (t_d):

- duplicates lower = max(0, L_p + 1 - first_fetch): it processed at least up to L_p;
- duplicates upper = lower + ceil(r * (t_d - t_p)): it cannot have processed faster than
  its fastest observed rate until it was replaced; capped by what existed, i.e. the log
  end the next owner reported at its first progress (position + lag) minus first_fetch;
- the pause within [first_fetch - t_d, first_fetch - t_p]: it stopped somewhere
  between its last progress and the detection.

A ``lost`` owner knew its offsets at the lost callback (exact duplicates), but not when
the coordinator took the partition: the pause within [first_fetch - min(lost, next
assign), first_fetch - (last progress or assignment)].

A next owner that gave the partition up again without reading it (revoked before its
first fetch, a quick double rebalance) neither confirms nor causes duplicates: the
previous owner's uncommitted records are read again by the first later owner that
fetches, so that owner's first fetch offset confirms this handoff's duplicates (the
next handoff, from an owner that processed nothing, counts none). The pause of this
handoff ends when the idle owner gave the partition up (its release, or the next
assignment if it never released it); the next handoff counts on from there, so the
partition-seconds add up without overlap.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pipelines.measures import point_figure


def _seconds(later: int | None, earlier: int | None) -> float | None:
    return None if later is None or earlier is None else (later - earlier) / 1000.0


def _dups(last_processed: int | None, start: int | None) -> int | None:
    return None if last_processed is None or start is None else max(0, last_processed + 1 - start)


def _max_known(*offsets: int | None) -> int | None:
    known = [o for o in offsets if o is not None and o >= 0]
    return max(known) if known else None


def _pause_end_ms(nxt: dict[str, Any]) -> tuple[int | None, int | None]:
    """When the partition became available again after being handed to ``nxt``, as
    (earliest, latest): its first fetch (a range when the agent found it at a progress
    tick), or, if it gave the partition up without reading, when it did."""
    if nxt["first_fetch_ms"] is not None or nxt["release_kind"] is None:
        end = nxt["first_fetch_ms"]
        return (None if end is None else end - int(nxt["first_fetch_window_ms"] or 0)), end
    end = nxt["released_ms"] if nxt["released_ms"] is not None else nxt["next_assigned_ms"]
    return end, end


def _waited(reader: dict[str, Any], end: tuple[int | None, int | None], *starts: int | None) -> list[float | None]:
    """Seconds from each of ``starts`` to the pause's end (earliest end for the first start,
    latest for the others), counting only time in which a record was waiting: from the
    production (Kafka timestamp) of the first record read after the handoff, by ``reader``,
    if it came later, and none at all if it came after ``reader``'s assignment (nothing
    waited on the handoff: an idle partition does not pause)."""
    produced = reader["first_fetch_timestamp_ms"] if reader["first_fetch_ms"] is not None else None
    if produced is not None and produced > reader["assigned_ms"]:
        return [0.0 for _ in starts]
    out = []
    for i, start in enumerate(starts):
        later = end[0] if i == 0 else end[1]
        if start is not None and produced is not None:
            start = max(start, produced)
        seconds = _seconds(later, start)
        out.append(None if seconds is None else max(0.0, seconds))
    return out


def handoff(prev: dict[str, Any], nxt: dict[str, Any], reader: dict[str, Any] | None = None) -> dict[str, Any]:
    """The handoff from interval ``prev`` to the next interval ``nxt`` of the same partition;
    ``reader`` is the first interval from ``nxt`` on that fetched (default ``nxt``)."""
    kind = prev["release_kind"]
    reader = nxt if reader is None else reader
    end, ff_off = _pause_end_ms(nxt), reader["first_fetch_offset"]
    committed = _max_known(prev["committed_at_release"], prev["committed_max"])
    row = {
        "handoff_id": f"{prev['assign_event_id']}>{nxt['assign_event_id']}:{prev['topic']}/{prev['partition']}",
        "cluster_id": prev["cluster_id"], "group_id": prev["group_id"], "topic": prev["topic"], "partition": prev["partition"],
        "prev_agent_id": prev["agent_id"], "prev_member_id": prev["member_id"], "next_agent_id": nxt["agent_id"],
        "next_member_id": nxt["member_id"], "same_owner": prev["agent_id"] == nxt["agent_id"],
        "prev_assigned_ms": prev["assigned_ms"], "generation": nxt["generation"],
        "release_kind": "crash" if kind == "unreleased" else kind, "revoke_ms": prev["released_ms"],
        "assigned_ms": nxt["assigned_ms"], "first_fetch_ms": nxt["first_fetch_ms"],
        "first_fetch_offset": nxt["first_fetch_offset"], "first_fetch_window_ms": nxt["first_fetch_window_ms"],
        "first_fetch_timestamp_ms": nxt["first_fetch_timestamp_ms"],
        "last_processed_at_revoke": prev["last_processed_at_release"], "committed_at_revoke": committed,
        "revoke_callback_ms": prev["callback_ms"], "revoke_event_id": prev["release_event_id"],
        "commit_in_revoke": prev["commit_in_revoke"],
    }
    last_progress = prev["last_progress_ms"] or prev["assigned_ms"]
    if kind in ("revoked", "lost"):
        uncommitted = _dups(prev["last_processed_at_release"], committed)
        confirmed = _dups(prev["last_processed_at_release"], ff_off)
        # a first record found at a progress tick without the group's committed offset: at most
        # what the previous owner processed past its last commit (the next owner starts at or after it)
        offset_unknown = ff_off is None and reader["first_fetch_ms"] is not None
        lower, upper = (0, uncommitted) if offset_unknown else (confirmed, confirmed)
        if kind == "revoked":
            low, high = _waited(reader, end, prev["released_ms"], prev["released_ms"])
            pause = low if low == high else None
        else:
            pause = None
            low, high = _waited(reader, end, min(prev["released_ms"], nxt["assigned_ms"]), last_progress)
        row.update(pause_s=point_figure(pause, low), pause_upper_s=high, duplicates=point_figure(confirmed, lower),
                   duplicates_upper=upper, uncommitted_at_revoke=uncommitted)
    else:
        lower = _dups(prev["last_progress_processed_offset"], ff_off)
        upper = None
        if lower is not None and prev["last_progress_ms"] is not None:
            window_s = max(0.0, (nxt["assigned_ms"] - prev["last_progress_ms"]) / 1000.0)
            upper = lower + math.ceil((prev["max_rate_per_s"] or 0.0) * window_s)
            if reader["first_progress_log_end"] is not None and ff_off is not None:
                upper = max(lower, min(upper, reader["first_progress_log_end"] - ff_off))
        low, high = _waited(reader, end, nxt["assigned_ms"], last_progress)
        row.update(pause_s=point_figure(None, low), pause_upper_s=high, duplicates=point_figure(None, lower),
                   duplicates_upper=upper,
                   uncommitted_at_revoke=_dups(prev["last_progress_processed_offset"], committed))
    return row


def handoffs_of(intervals: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every completed handoff among one group's ownership intervals (a released partition
    nobody has been assigned yet is not a handoff until its next owner shows up)."""
    by_partition: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in intervals:
        by_partition[(row["topic"], row["partition"])].append(row)
    out = []
    for rows in by_partition.values():
        rows.sort(key=lambda r: (r["assigned_ms"], r["assign_event_id"]))
        readers: list[dict[str, Any] | None] = [None] * len(rows)  # per interval: it, or the first later one that fetched
        for i in reversed(range(len(rows))):
            fetched = rows[i]["first_fetch_ms"] is not None
            readers[i] = rows[i] if fetched or i + 1 == len(rows) else readers[i + 1]
        out.extend(handoff(rows[i], rows[i + 1], readers[i + 1])
                   for i in range(len(rows) - 1) if rows[i]["release_kind"] is not None)
    return out
