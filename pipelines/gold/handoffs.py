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
the partition at t_d) left no offsets, only what it sent while alive. Its duplicates are the
records it handed out (delivered: what a consumer's position counts) from where the next owner
started (first_fetch, the group's committed offset) on, so the bounds bracket the offset of the
last record it handed out:

- at least the highest of: its position at its last progress tick (t_p) minus one, the last
  processed offset then, its own first fetch offset and its last commit minus one: each a
  record it had handed out by then; with none of them, nothing is known handed out (lower 0);
- at most the record before the log end at its last tick (position + lag) plus what was
  produced after the tick until ``silent_until`` (below), at the faster of the rates the log
  grew at between its first and last ticks and between its last tick and the next reader's
  first progress: a record not yet produced cannot have been handed out. Not its own fastest
  rate: an owner catching up a backlog hands records out far faster than at any tick (seen:
  163 records past such a bound), but never faster than the log grows past its end. And
  never past the log end the next reader reported at its first progress; with neither
  (no tick with a lag, no reader's progress), no upper bound.

``silent_until``: the agent ticks every progress interval from a timer of its own, at the
first poll after the timer fires, and a poll that hands out records is the only way records
leave the consumer; each tick's event is queued at once and produced within the emitter's
linger. So an owner that went on polling past t_p + (its longest observed tick interval)
ticked again, and that tick reached the telemetry topic unless the process died within
``SEND_ALLOWANCE_MS`` of it: its last record was handed out by t_p + longest interval +
allowance (or by t_d, if sooner). An owner that never ticked for the partition (a crash within
an interval of its assignment) is bounded by t_d alone. Other events (commits, health) come
when the application acts, not on a clock: their absence says nothing, so only the ticks
bound the silence. The width is about the partition's production rate times (tick interval +
allowance), plus the lag at the last tick: a shorter ``lens.progress.interval.ms`` narrows it
(widths measured: docs/measured.md, ``benchmarks/crash_bounds.py``). Not covered: a tick
reports at most 100 partitions (the first, sorted); one that leaves those 100 as its owner
gains partitions ticks no more while still read, and its bounds would be too tight.

The pause of a crash is within [first_fetch - silent_until, first_fetch - the earliest its
last record can have been handed out]: after the tick before its last tick that counted
records (a cold partition's last record can be older than the last tick, by ticks), or after
its first fetch or assignment. The records a tick counts are those handed out in the default
processing mode; in ``explicit`` mode they are those processed, handed out possibly earlier
(not covered: its pause's upper bound can be too low). Of an owner not seen reading the
partition, the lower bound starts at the next assignment: the handoff before it counted the
wait up to there, as for an owner revoked before reading (a first fetch that died with the
process is what the upper bound still allows).

A ``lost`` owner knew its offsets at the lost callback (exact duplicates), but not when
the coordinator took the partition: the pause within [first_fetch - min(lost, next
assign), first_fetch - (last progress or assignment)].

A next owner that gave the partition up again without reading it (revoked before its
first fetch, a quick double rebalance) neither confirms nor causes duplicates: the
previous owner's uncommitted records are read again by the first later owner that
fetches, so that owner's first fetch offset confirms this handoff's duplicates. The
next handoff, from an owner that handed out nothing, costs none: 0 duplicates and 0
uncommitted, exactly (``handed_out_nothing``: every eager group's formation gives its
first member all partitions and takes them back before it reads). The pause of this
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

# How long a progress event can take from its tick to the telemetry topic: queued at once,
# produced within the emitter's linger.ms (50) plus a round trip; a process that died later
# than this after a tick had sent it.
SEND_ALLOWANCE_MS = 500


def _seconds(later: int | None, earlier: int | None) -> float | None:
    return None if later is None or earlier is None else (later - earlier) / 1000.0


def _dups(last_processed: int | None, start: int | None) -> int | None:
    return None if last_processed is None or start is None else max(0, last_processed + 1 - start)


def _max_known(*offsets: int | None) -> int | None:
    known = [o for o in offsets if o is not None and o >= 0]
    return max(known) if known else None


def _before(offset: int | None) -> int | None:
    """The record before a NEXT-to-read offset (what a position or a commit says was handed out)."""
    return None if offset is None else offset - 1


def _silent_until_ms(prev: dict[str, Any], nxt: dict[str, Any]) -> int:
    """The latest a crashed owner ``prev`` can have handed out a record (module docstring)."""
    longest = prev.get("max_progress_interval_ms")  # .get: an interval kept before the column
    if prev["last_progress_ms"] is None or longest is None:
        return nxt["assigned_ms"]
    return min(nxt["assigned_ms"], prev["last_progress_ms"] + math.ceil(longest) + SEND_ALLOWANCE_MS)


def _log_end(position: int | None, lag: int | None) -> int | None:
    return None if position is None or position <= 0 or lag is None else position + lag


def _growth_per_ms(earlier: tuple[int | None, int | None], later: tuple[int | None, int | None]) -> float | None:
    """Records per ms the log grew between two (log end, time) points, if both are known and apart."""
    (end_a, at_a), (end_b, at_b) = earlier, later
    if None in (end_a, at_a, end_b, at_b) or at_b <= at_a:
        return None
    return max(0, end_b - end_a) / (at_b - at_a)


def _crash_dups(prev: dict[str, Any], reader: dict[str, Any], until_ms: int,
                committed: int | None) -> tuple[int, int | None]:
    """(lower, upper) of the records a crashed owner ``prev`` handed out that ``reader`` read again."""
    position = prev.get("last_progress_position")  # .get: an interval kept before the column
    surely = _max_known(_before(position), prev["last_progress_processed_offset"], prev["first_fetch_offset"],
                        _before(committed))
    after = (reader["first_progress_log_end"], reader.get("first_progress_log_end_ms"))
    highest = [] if after[0] is None else [after[0] - 1]
    last = (_log_end(position, prev["last_progress_lag"]), prev["last_progress_ms"])
    rates = [r for r in (_growth_per_ms((prev["first_progress_log_end"], prev.get("first_progress_log_end_ms")), last),
                         _growth_per_ms(last, after)) if r is not None]
    if rates:
        highest.append(last[0] - 1 + math.ceil(max(rates) * max(0, until_ms - last[1])))
    start = reader["first_fetch_offset"]
    lower = _dups(surely, start) or 0
    # an unknown start is at or after the last commit seen (the group's committed offset)
    earliest = start if start is not None else committed
    upper = _dups(min(highest), earliest) if highest and earliest is not None else None
    return lower, None if upper is None else max(lower, upper)


def handed_out_nothing(owner: dict[str, Any]) -> bool:
    """The owner let the partition go (revoked or lost) having handed out none of its records since its
    assignment. The agents' own word where they send it (``handed_out_at_release``: the release's
    ``handed_out``, once the contract has it), else what today's events decide: no first record was
    reported for the ownership (both agents report the first record a poll hands out) and the release
    carried no position (both agents report the client's position, which a poll that hands out a record
    of the partition sets: librdkafka's application offset, the Java agent's slot, reset at each
    assignment). What the fallback cannot rule out: a Java application that seeks to the beginning or end
    after records its agent no longer watched for (30 s without any) were handed out, before the tick that
    would have found them."""
    said = owner.get("handed_out_at_release")  # .get: not a column until the agents send it
    if said is not None:
        return not said
    return owner["first_fetch_ms"] is None and owner["position_at_release"] is None \
        and owner["last_processed_at_release"] is None


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
        "cluster_id": prev["cluster_id"], "group_id": prev["group_id"], "topic": prev["topic"],
        "partition": prev["partition"],
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
        nothing = handed_out_nothing(prev)  # then nothing of its own can be read again: exactly 0
        uncommitted = 0 if nothing else _dups(prev["last_processed_at_release"], committed)
        confirmed = 0 if nothing else _dups(prev["last_processed_at_release"], ff_off)
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
        until = _silent_until_ms(prev, nxt)
        lower, upper = _crash_dups(prev, reader, until, committed)
        # its last record came after the tick before its last tick that counted records (an idle
        # partition's last record may be ticks older than its last tick), or after its first
        after = prev.get("last_record_after_ms") or prev["assigned_ms"]  # .get: kept before the column
        alive = max(after, (prev["first_fetch_ms"] or 0) - int(prev["first_fetch_window_ms"] or 0))
        # not seen reading: the link before it counted the wait up to the next assignment (``_pause_end_ms``)
        earliest = nxt["assigned_ms"] if prev["first_fetch_ms"] is None else until
        low, high = _waited(reader, end, earliest, alive)
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
        # per interval: it, or the first later one that fetched
        readers: list[dict[str, Any] | None] = [None] * len(rows)
        for i in reversed(range(len(rows))):
            fetched = rows[i]["first_fetch_ms"] is not None
            readers[i] = rows[i] if fetched or i + 1 == len(rows) else readers[i + 1]
        out.extend(handoff(rows[i], rows[i + 1], readers[i + 1])
                   for i in range(len(rows) - 1) if rows[i]["release_kind"] is not None)
    return out
