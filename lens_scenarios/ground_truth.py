"""What really happened in a run, computed from the members' truth logs alone (never from telemetry).

``GroundTruth.load(run_dir)`` returns plain dataclasses (no DataFrames) that the
pipelines can compare their gold tables with:

- duplicates: deliveries of a record id that had been delivered before;
- ownership intervals: a run of one partition's records at one member process,
  cut where that process got a revoke or lost callback for the partition;
- handoffs: consecutive ownership intervals of a partition; the duplicates are the
  offsets the next owner re-read (``last_prev - first_next + 1``); the pause runs until
  the first record at the next owner, from the moment the previous owner let go: its
  revoke callback for a graceful handoff (the member logs a batch's records before it
  processes them, so the partition is still in use until it polls again and the
  revoke callback runs), else its last record (lost or killed: no clean release);
  only time in which a record waited counts: from the first record's production (its
  Kafka timestamp) if that came later, and no pause at all if it came after the next
  owner's assignment (an idle partition does not pause; the gold definition, `pause_s`);
  an eager rebalance that gives a partition back to the same process is a handoff too;
- each handoff's cause, from what the scenario did (never from telemetry): the previous
  owner was killed (``crash``), lost the partition after a stall the timeline ordered
  (``poll_interval_exceeded``; ``session_lost`` without one), or was closing (``restart``
  or ``scale_in``, whichever timeline action stopped it, a protocol migration being a restart
  on another protocol; ``scale_in`` at the run's end);
  else the timeline action last played before the release (``start`` before the timeline);
- rebalances: assign/revoke/lost callbacks of the whole fleet, clustered in time
  (a quiet gap of ``REBALANCE_GAP_S`` separates two), leaving out each process's own
  first assignment and the revoke it gets while closing: a static member that restarts
  and gets its partitions back causes no rebalance.

A member's group.protocol plays no part: truth reads callbacks and records alone, so a run whose
members change protocol mid-run (a KIP-848 migration) is computed exactly as any other.

Members that run the plain client (``agent: false``) keep the same truth log, so all of the
above covers them exactly as the instrumented ones; each handoff says whether its owners were
instrumented, and ``coverage`` (lens_scenarios.coverage) the share of partition-time the
instrumented members held.
"""
from __future__ import annotations

import bisect
import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from lens_scenarios.coverage import HeldInterval, coverage, coverage_by_hour, held_intervals
from lens_scenarios.spec import RESTARTS
from lens_scenarios.truth_log import CallbackEvent, Delivery, ProcessMeta, read_deliveries, read_events, read_meta

REBALANCE_GAP_S = 1.0
NS = 1_000_000_000
# timeline action -> the cause of the handoffs it brings about (the gold causes' names)
ACTION_CAUSES = {"rolling_restart": "restart", "protocol_migration": "protocol_migration", "scale_out": "scale_out",
                 "scale_in": "scale_in", "crash": "crash", "slow_processing": "poll_interval_exceeded",
                 "subscription_change": "subscription_change", "enforce_rebalance": "enforced"}


@dataclass(frozen=True)
class OwnershipInterval:
    topic: str
    partition: int
    member: str
    process: str
    first_offset: int
    last_offset: int
    records: int
    first_mono_ns: int
    last_mono_ns: int
    first_wall_ns: int
    last_wall_ns: int
    first_timestamp_ms: int  # the Kafka timestamp of its first record
    ended_by: str  # revoke | lost | exit (closed) | killed (SIGKILLed: no exit event)
    released_mono_ns: int | None = None  # the revoke or lost callback that ended it, if any

    @property
    def let_go_mono_ns(self) -> int:
        """When the partition stopped being in use here: the revoke callback, else the last record."""
        return self.released_mono_ns if self.ended_by == "revoke" and self.released_mono_ns else self.last_mono_ns


@dataclass(frozen=True)
class Handoff:
    topic: str
    partition: int
    prev_member: str
    prev_process: str
    next_member: str
    next_process: str
    last_offset_prev: int
    first_offset_next: int
    duplicates: int
    pause_s: float
    released_by: str
    at_wall_ns: int  # the previous owner's last record
    cause: str
    prev_instrumented: bool = True  # False: the plain client, which gold cannot see
    next_instrumented: bool = True

    @property
    def moved(self) -> bool:
        """True when the partition went to another member (not the same member or its restart)."""
        return self.prev_member != self.next_member


@dataclass(frozen=True)
class Rebalance:
    start_mono_ns: int
    end_mono_ns: int
    start_wall_ns: int
    processes: tuple[str, ...]
    partitions_revoked: int
    partitions_lost: int
    partitions_assigned: int


@dataclass(frozen=True)
class Summary:
    records: int
    unique_records: int
    duplicates: int
    duplicates_in_timeline: int
    rebalances: int
    partitions_revoked: int
    handoffs: int
    moved_partitions: int
    max_pause_s: float
    total_pause_s: float


def ownership_intervals(deliveries: list[Delivery], events: list[CallbackEvent],
                        member_of: dict[str, str]) -> list[OwnershipInterval]:
    """Split each (process, partition)'s records where that process released the partition."""
    releases: dict[tuple[str, str, int], list[tuple[int, str]]] = defaultdict(list)
    exited = {e.process for e in events if e.kind == "exit"}
    for e in events:
        if e.kind in ("revoke", "lost"):
            for topic, partition in e.partitions:
                releases[(e.process, topic, partition)].append((e.mono_ns, e.kind))
    runs: dict[tuple[str, str, int], list[Delivery]] = defaultdict(list)
    for d in sorted(deliveries, key=lambda d: (d.mono_ns, d.offset)):
        runs[(d.process, d.topic, d.partition)].append(d)
    intervals = []
    for key, rows in runs.items():
        cuts = sorted(releases.get(key, []))
        cut_times = [t for t, _ in cuts]
        # rows between the same two releases form one interval; the release after them ends it
        for k, group in groupby(rows, key=lambda r: bisect.bisect_left(cut_times, r.mono_ns)):
            ended, released = (cuts[k][1], cuts[k][0]) if k < len(cuts) else (
                "exit" if key[0] in exited else "killed", None)
            intervals.append(_interval(list(group), member_of[key[0]], ended, released))
    return intervals


def _interval(rows: list[Delivery], member: str, ended_by: str, released_mono_ns: int | None) -> OwnershipInterval:
    first, last = rows[0], rows[-1]
    return OwnershipInterval(first.topic, first.partition, member, first.process,
                             min(r.offset for r in rows), max(r.offset for r in rows), len(rows),
                             first.mono_ns, last.mono_ns, first.wall_ns, last.wall_ns, first.timestamp_ms, ended_by,
                             released_mono_ns)


@dataclass(frozen=True, order=True)
class Played:
    """One step of the timeline as it was played."""

    mono_ns: int
    action: str
    members: tuple[str, ...]


def played(manifest: dict[str, Any]) -> list[Played]:
    start = int(manifest.get("timeline_start_mono_ns", 0))
    return sorted(Played(start + int(a["at_s"] * NS), a["action"], tuple(a["members"]))
                  for a in manifest.get("actions", []))


def cause_of(prev: OwnershipInterval, closing_ns: dict[str, int], steps: list[Played]) -> str:
    """Why ``prev``'s owner let the partition go (see the module docstring)."""
    if prev.ended_by == "killed":
        return "crash"
    released = prev.let_go_mono_ns
    before = [s for s in steps if s.mono_ns <= released]
    if prev.ended_by == "lost":
        # up to the lost callback: the stalled member's last record came before the stall step was logged
        lost_at = prev.released_mono_ns or released
        stalled = any(s.action == "slow_processing" and prev.member in s.members and s.mono_ns <= lost_at
                      for s in steps)
        return "poll_interval_exceeded" if stalled else "session_lost"
    if prev.ended_by == "exit" or closing_ns.get(prev.process, released + 1) <= released:
        stopped = [s for s in before if prev.member in s.members and s.action in (*RESTARTS, "scale_in")]
        return ACTION_CAUSES[stopped[-1].action] if stopped else "scale_in"
    return ACTION_CAUSES[before[-1].action] if before else "start"


def pause_s(prev: OwnershipInterval, nxt: OwnershipInterval, assigned_ns: list[int]) -> float:
    """Seconds a record waited between ``prev`` letting go and ``nxt``'s first record;
    ``assigned_ns``: the next process's assignments of the partition (mono, sorted)."""
    produced = nxt.first_timestamp_ms * 1_000_000 - (nxt.first_wall_ns - nxt.first_mono_ns)  # on the mono clock
    taken = [t for t in assigned_ns if t <= nxt.first_mono_ns]
    if taken and produced > taken[-1]:
        return 0.0
    return max(0.0, (nxt.first_mono_ns - max(prev.let_go_mono_ns, produced)) / NS)


def handoffs(intervals: list[OwnershipInterval], events: list[CallbackEvent], steps: list[Played],
             instrumented: dict[str, bool] | None = None) -> list[Handoff]:
    """Consecutive ownership intervals of each partition; ``instrumented``: per process (default: all)."""
    seen = instrumented or {}
    by_partition: dict[tuple[str, int], list[OwnershipInterval]] = defaultdict(list)
    for iv in intervals:
        by_partition[(iv.topic, iv.partition)].append(iv)
    closing_ns = {e.process: e.mono_ns for e in events if e.kind == "closing"}
    assigned: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for e in sorted(events, key=lambda e: e.mono_ns):
        if e.kind == "assign":
            for topic, partition in e.partitions:
                assigned[(e.process, topic, partition)].append(e.mono_ns)
    result = []
    for (topic, partition), ivs in sorted(by_partition.items()):
        ivs.sort(key=lambda iv: iv.first_mono_ns)
        for prev, nxt in zip(ivs, ivs[1:]):
            result.append(Handoff(
                topic, partition, prev.member, prev.process, nxt.member, nxt.process,
                prev.last_offset, nxt.first_offset, max(0, prev.last_offset - nxt.first_offset + 1),
                pause_s(prev, nxt, assigned[(nxt.process, topic, partition)]), prev.ended_by, prev.last_wall_ns,
                cause_of(prev, closing_ns, steps), seen.get(prev.process, True), seen.get(nxt.process, True)))
    return result


def group_callbacks(events: list[CallbackEvent]) -> list[CallbackEvent]:
    """Callbacks caused by the group: not a process's first assignment, not its own closing revoke."""
    kept, seen_assign, closing = [], set(), set()
    for e in sorted(events, key=lambda e: e.mono_ns):
        if e.kind == "closing":
            closing.add(e.process)
        elif e.kind == "assign" and e.process not in seen_assign:
            seen_assign.add(e.process)
        elif e.kind in ("assign", "revoke", "lost") and e.process not in closing:
            kept.append(e)
    return kept


def rebalances(events: list[CallbackEvent], gap_s: float = REBALANCE_GAP_S) -> list[Rebalance]:
    clusters: list[list[CallbackEvent]] = []
    for e in group_callbacks(events):
        if clusters and e.mono_ns - clusters[-1][-1].mono_ns <= gap_s * NS:
            clusters[-1].append(e)
        else:
            clusters.append([e])
    return [Rebalance(c[0].mono_ns, c[-1].mono_ns, c[0].wall_ns, tuple(sorted({e.process for e in c})),
                      sum(len(e.partitions) for e in c if e.kind == "revoke"),
                      sum(len(e.partitions) for e in c if e.kind == "lost"),
                      sum(len(e.partitions) for e in c if e.kind == "assign")) for c in clusters]


def duplicate_count(deliveries: list[Delivery], since_mono_ns: int = 0) -> int:
    """Deliveries (at or after ``since_mono_ns``) of a record id already delivered before."""
    seen: set[int] = set()
    dups = 0
    for d in sorted(deliveries, key=lambda d: d.mono_ns):
        if d.record_id in seen and d.mono_ns >= since_mono_ns:
            dups += 1
        seen.add(d.record_id)
    return dups


@dataclass
class GroundTruth:
    run_dir: Path
    manifest: dict[str, Any]
    deliveries: list[Delivery]
    events: list[CallbackEvent]
    intervals: list[OwnershipInterval]
    handoffs: list[Handoff]
    rebalances: list[Rebalance]
    processes: list[ProcessMeta]
    held: list[HeldInterval]

    @classmethod
    def load(cls, run_dir: Path | str) -> "GroundTruth":
        run_dir = Path(run_dir)
        manifest_path = run_dir / "manifest.json"
        manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
        metas = read_meta(run_dir)
        member_of = {m.process: m.member for m in metas}
        deliveries = [d for m in metas for d in read_deliveries(run_dir, m)]
        events = [e for m in metas for e in read_events(run_dir, m)]
        instrumented = {m.process: m.agent for m in metas}
        intervals = ownership_intervals(deliveries, events, member_of)
        return cls(run_dir, manifest, deliveries, events, intervals,
                   handoffs(intervals, events, played(manifest), instrumented), rebalances(events), metas,
                   held_intervals(events, deliveries, member_of, instrumented))

    @property
    def timeline_start_mono_ns(self) -> int:
        return int(self.manifest.get("timeline_start_mono_ns", 0))

    def timeline_rebalances(self) -> list[Rebalance]:
        return [r for r in self.rebalances if r.end_mono_ns >= self.timeline_start_mono_ns]

    def timeline_handoffs(self) -> list[Handoff]:
        start_wall = int(self.manifest.get("timeline_start_wall_ns", 0))
        return [h for h in self.handoffs if h.at_wall_ns >= start_wall]

    def summary(self) -> Summary:
        hs = self.timeline_handoffs()
        rbs = self.timeline_rebalances()
        return Summary(
            records=len(self.deliveries), unique_records=len({d.record_id for d in self.deliveries}),
            duplicates=duplicate_count(self.deliveries),
            duplicates_in_timeline=duplicate_count(self.deliveries, self.timeline_start_mono_ns),
            rebalances=len(rbs), partitions_revoked=sum(r.partitions_revoked + r.partitions_lost for r in rbs),
            handoffs=len(hs), moved_partitions=sum(1 for h in hs if h.moved),
            max_pause_s=round(max((h.pause_s for h in hs), default=0.0), 3),
            total_pause_s=round(sum(h.pause_s for h in hs), 3))

    def member_ids(self) -> dict[str, list[str]]:
        """Per process, the group member ids its client had at its callbacks (in order)."""
        ids: dict[str, list[str]] = {m.process: [] for m in self.processes}
        for e in sorted(self.events, key=lambda e: e.mono_ns):
            if e.member_id and e.member_id not in ids[e.process]:
                ids[e.process].append(e.member_id)
        return ids

    def coverage_json(self) -> dict[str, Any]:
        """The group's coverage over the run and per UTC hour (gold's is checked against these)."""
        def row(c) -> dict[str, Any]:
            return {"instrumented_s": round(c.instrumented_s, 3), "owned_s": round(c.owned_s, 3),
                    "coverage": None if c.share is None else round(c.share, 6)}

        return {"group_id": self.manifest.get("group_id"), **row(coverage(self.held)),
                "by_hour": [{"hour_start_wall_ns": hour, **row(c)} for hour, c in coverage_by_hour(self.held).items()]}

    def to_json(self) -> dict[str, Any]:
        """The summary, handoffs, rebalances, processes (instrumented or not), who held what when and the
        coverage, as plain JSON (written as truth.json beside the run)."""
        ids = self.member_ids()
        return {"summary": asdict(self.summary()),
                "handoffs": [{**asdict(h), "moved": h.moved} for h in self.handoffs],
                "rebalances": [asdict(r) for r in self.rebalances],
                "processes": [{"process": m.process, "member": m.member, "instrumented": m.agent,
                               "group_protocol": m.group_protocol, "member_ids": ids[m.process]}
                              for m in self.processes],
                "ownership": [{**asdict(h), "seconds": round(h.seconds, 6)} for h in self.held],
                "coverage": self.coverage_json()}
