"""Who held each partition when, from the callbacks, and the share of that time the agent saw.

A fleet mid-adoption runs some members on the plain client, which emits no telemetry.
The truth's ``coverage`` is the share of partition-time owned by instrumented members:
instrumented held seconds over all held seconds, per group (one run is one group) and
per UTC hour. Gold's coverage, computed from telemetry alone, is checked against it.

A process holds a partition from its assign callback to its revoke or lost callback (its
closing revoke included), else to its exit; a SIGKILLed process (no exit) holds what it
still had until the last moment its truth log shows it alive (its last record or event).
Time in which nobody holds a partition (mid-rebalance) counts for neither side: it is
pause, not ownership.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from lens_scenarios.truth_log import CallbackEvent, Delivery

HOUR_NS = 3600 * 1_000_000_000
NS = 1_000_000_000


@dataclass(frozen=True)
class HeldInterval:
    """One process holding one partition, by its callbacks."""

    topic: str
    partition: int
    member: str
    process: str
    instrumented: bool
    start_mono_ns: int
    end_mono_ns: int
    start_wall_ns: int
    end_wall_ns: int
    ended_by: str  # revoke | lost | exit | killed

    @property
    def seconds(self) -> float:
        return (self.end_mono_ns - self.start_mono_ns) / NS


@dataclass(frozen=True)
class Coverage:
    """Instrumented over all held partition-seconds in one window (a group's run, or one hour of it)."""

    instrumented_s: float
    owned_s: float

    @property
    def share(self) -> float | None:
        """None when nothing was owned: no share to compare with."""
        return self.instrumented_s / self.owned_s if self.owned_s > 0 else None


def held_intervals(events: list[CallbackEvent], deliveries: list[Delivery], member_of: dict[str, str],
                   instrumented: dict[str, bool]) -> list[HeldInterval]:
    """Assign-to-release spans per process and partition (see the module docstring)."""
    last_seen: dict[str, tuple[int, int]] = {}
    for mono, wall, process in ((e.mono_ns, e.wall_ns, e.process) for e in events):
        last_seen[process] = max(last_seen.get(process, (mono, wall)), (mono, wall))
    for d in deliveries:
        last_seen[d.process] = max(last_seen.get(d.process, (d.mono_ns, d.wall_ns)), (d.mono_ns, d.wall_ns))
    by_process: dict[str, list[CallbackEvent]] = defaultdict(list)
    for e in events:
        by_process[e.process].append(e)
    result = []
    for process, evs in sorted(by_process.items()):
        held: dict[tuple[str, int], CallbackEvent] = {}

        def close(tp: tuple[str, int], mono: int, wall: int, why: str) -> None:
            start = held.pop(tp)
            result.append(HeldInterval(tp[0], tp[1], member_of[process], process, instrumented.get(process, True),
                                       start.mono_ns, mono, start.wall_ns, wall, why))

        for e in sorted(evs, key=lambda e: e.mono_ns):
            if e.kind == "assign":
                for tp in e.partitions:
                    held.setdefault(tp, e)
            elif e.kind in ("revoke", "lost"):
                for tp in e.partitions:
                    if tp in held:
                        close(tp, e.mono_ns, e.wall_ns, e.kind)
            elif e.kind == "exit":
                for tp in sorted(held):
                    close(tp, e.mono_ns, e.wall_ns, "exit")
        mono, wall = last_seen.get(process, (0, 0))
        for tp in sorted(held):
            close(tp, mono, wall, "killed")
    return sorted(result, key=lambda h: (h.topic, h.partition, h.start_mono_ns))


def coverage(held: list[HeldInterval]) -> Coverage:
    return Coverage(sum(h.seconds for h in held if h.instrumented), sum(h.seconds for h in held))


def coverage_by_hour(held: list[HeldInterval]) -> dict[int, Coverage]:
    """Per UTC hour (keyed by the hour's start, wall-clock ns): each span cut at the hour boundaries."""
    instrumented: dict[int, float] = defaultdict(float)
    owned: dict[int, float] = defaultdict(float)
    for h in held:
        start = h.start_wall_ns
        while start < h.end_wall_ns:
            hour = start - start % HOUR_NS
            end = min(h.end_wall_ns, hour + HOUR_NS)
            owned[hour] += (end - start) / NS
            if h.instrumented:
                instrumented[hour] += (end - start) / NS
            start = end
    return {hour: Coverage(instrumented[hour], owned[hour]) for hour in sorted(owned)}
