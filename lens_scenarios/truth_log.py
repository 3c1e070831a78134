"""The ground-truth log a member process keeps: every record handed to the application, every callback.

One member process (one incarnation of a member) writes three files in ``<run>/truth/``:

- ``<process>.meta.json``: member, process name, pid, the topic table, whether it ran the agent,
  its group.protocol (a migration changes it between a member's processes);
- ``<process>.records``: fixed 38-byte rows ``<HIqqqq``: topic index, partition, offset,
  record id, CLOCK_MONOTONIC ns, wall-clock ns, one per record that ``consume()`` handed over;
- ``<process>.events.jsonl``: assign / revoke / lost callbacks (with the group member id the
  client had then) and the process's own start, closing and exit, each with both clocks.

Durability bound: the member writes a consumed batch with one ``write()`` straight to
the kernel (no user-space buffer) before it processes the batch, so a SIGKILL loses at
most the records of the one ``consume()`` call that had returned but not yet been
written (microseconds of work; at most ``consume``'s batch size of 500 records). The page
cache survives the kill of the process; only a machine crash could lose more.

CLOCK_MONOTONIC is shared by all processes of one machine, so times from different
members are comparable; the wall clock is kept for joining with telemetry.
"""
from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROW = struct.Struct("<HIqqqqq")


@dataclass(frozen=True)
class Delivery:
    """One record handed to the application by one member process."""

    process: str
    topic: str
    partition: int
    offset: int
    record_id: int
    mono_ns: int
    wall_ns: int
    timestamp_ms: int  # the record's Kafka timestamp (when the feeder produced it)


@dataclass(frozen=True)
class CallbackEvent:
    process: str
    kind: str  # start | assign | revoke | lost | closing | exit
    partitions: tuple[tuple[str, int], ...]
    mono_ns: int
    wall_ns: int
    member_id: str | None = None  # the client's group member id at a callback (None: not known yet)


@dataclass(frozen=True)
class ProcessMeta:
    member: str
    process: str
    pid: int
    topics: tuple[str, ...]
    agent: bool = True  # False: the plain client, which emitted no telemetry
    group_protocol: str | None = None  # classic | consumer (None: a run from before it was logged)


def truth_dir(run_dir: Path) -> Path:
    return run_dir / "truth"


class TruthWriter:
    """The member-side writer; unbuffered so that a SIGKILL cannot take more than the batch in hand."""

    def __init__(self, run_dir: Path, member: str, process: str, topics: Iterable[str], agent: bool = True,
                 group_protocol: str | None = None) -> None:
        folder = truth_dir(run_dir)
        folder.mkdir(parents=True, exist_ok=True)
        self.topics = tuple(topics)
        self._index = {name: i for i, name in enumerate(self.topics)}
        meta = {"member": member, "process": process, "pid": os.getpid(), "topics": list(self.topics),
                "agent": agent, "group_protocol": group_protocol}
        (folder / f"{process}.meta.json").write_text(json.dumps(meta))
        self._records = open(folder / f"{process}.records", "ab", buffering=0)  # noqa: SIM115 - lives with the writer
        self._events = open(folder / f"{process}.events.jsonl", "a", buffering=1)  # noqa: SIM115 - line-buffered

    def records(self, rows: Iterable[tuple[str, int, int, int, int]]) -> int:
        """Write (topic, partition, offset, record id, Kafka timestamp ms) rows stamped now; returns how many."""
        mono, wall = time.monotonic_ns(), time.time_ns()
        data = b"".join(ROW.pack(self._index[t], p, o, rid, mono, wall, ts) for t, p, o, rid, ts in rows)
        if data:
            self._records.write(data)
        return len(data) // ROW.size

    def event(self, kind: str, partitions: Iterable[tuple[str, int]] = (), member_id: str | None = None) -> None:
        row = {"kind": kind, "partitions": [list(tp) for tp in partitions], "mono_ns": time.monotonic_ns(),
               "wall_ns": time.time_ns()}
        if member_id is not None:
            row["member_id"] = member_id
        self._events.write(json.dumps(row) + "\n")

    def close(self) -> None:
        self._records.close()
        self._events.close()


def read_meta(run_dir: Path) -> list[ProcessMeta]:
    metas = []
    for path in sorted(truth_dir(run_dir).glob("*.meta.json")):
        raw = json.loads(path.read_text())
        metas.append(ProcessMeta(raw["member"], raw["process"], raw["pid"], tuple(raw["topics"]),
                                 bool(raw.get("agent", True)), raw.get("group_protocol")))
    return metas


def read_deliveries(run_dir: Path, meta: ProcessMeta) -> Iterator[Delivery]:
    """Rows of one process; a row cut short by a SIGKILL mid-write is dropped."""
    data = (truth_dir(run_dir) / f"{meta.process}.records").read_bytes()
    usable = len(data) - len(data) % ROW.size
    for t, p, o, rid, mono, wall, ts in ROW.iter_unpack(data[:usable]):
        yield Delivery(meta.process, meta.topics[t], p, o, rid, mono, wall, ts)


def read_events(run_dir: Path, meta: ProcessMeta) -> list[CallbackEvent]:
    events = []
    for line in (truth_dir(run_dir) / f"{meta.process}.events.jsonl").read_text().splitlines():
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue  # the last line of a SIGKILLed process may be cut short
        events.append(CallbackEvent(meta.process, raw["kind"], tuple((t, p) for t, p in raw["partitions"]),
                                    raw["mono_ns"], raw["wall_ns"], raw.get("member_id")))
    return events
