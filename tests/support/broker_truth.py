"""A scenario's handoffs priced from the broker's own log, set beside its ground truth (pure Python, no Spark).

After a run on a broker that outlives it: ``__consumer_offsets`` read raw
(``pipelines.broker_log.offsets_topic``), the run's group's records decoded, its history rebuilt
(classic generations and KIP-848 events, the ownership changes, the commits the stage keeps),
the log ends the bounds need looked up with ``offsets_for_times`` (what the broker stage lands),
the handoffs priced (``pipelines.gold.broker_handoffs``) and their causes found
(``pipelines.gold.broker_causes``). ``compare`` matches each ground-truth handoff to the broker's
(a chain of them when an owner in between read nothing: the truth, cut from the records read,
skips it) and says whether the truth lies within the bounds, how wide they are, how far the
estimates and, under KIP-848, the pause's point figure are from the truth, and whether the causes agree.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from pipelines.broker_log.classic_history import classic_generations, classic_ownership_changes
from pipelines.broker_log.commit_window import commit_rows, kept_commits
from pipelines.broker_log.consumer_history import consumer_events, consumer_ownership_changes
from pipelines.broker_log.offsets_topic import read_offsets_topic
from pipelines.broker_log.records import RecordDecoder, Skipped, record_row
from pipelines.broker_log.schema_set import schema_set
from pipelines.broker_log.topic_ids import ids_from_admin, ids_from_records
from pipelines.gold.broker_causes import broker_causes
from pipelines.gold.broker_handoffs import broker_handoffs, log_end_requests

# The coordinator's clock and the records' timestamps are whole milliseconds; truth's clock is finer.
CLOCK_SLACK_S = 0.002


@dataclass
class BrokerView:
    """One group's history as the broker wrote it, and its handoffs priced."""

    group_id: str
    rows: list[dict[str, Any]]
    generations: list[dict[str, Any]]
    events: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    commits: list[dict[str, Any]]
    log_ends: list[dict[str, Any]]
    handoffs: list[dict[str, Any]] = field(default_factory=list)


def look_up_log_ends(bootstrap: str, wanted: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """The records produced by each (topic, partition, at_ms): ``offsets_for_times(at_ms + 1)``,
    the high watermark when no record is later (the broker stage's lookups, ``LOG_END_FIELDS``)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lens-broker-truth", "enable.auto.commit": False})
    try:
        by_time: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for topic, partition, at_ms in wanted:
            by_time[at_ms].append((topic, partition))
        highs = {tp: consumer.get_watermark_offsets(TopicPartition(*tp), timeout=10)[1]
                 for tp in {(t, p) for t, p, _ in wanted}}
        out = []
        for at_ms, tps in sorted(by_time.items()):
            found = consumer.offsets_for_times([TopicPartition(t, p, at_ms + 1) for t, p in tps], timeout=30)
            out += [{"topic": f.topic, "partition": f.partition, "at_ms": at_ms,
                     "log_end_offset": f.offset if f.offset >= 0 else highs[(f.topic, f.partition)]} for f in found]
        return out
    finally:
        consumer.close()


def broker_view(bootstrap: str, group_id: str, admin: Any) -> BrokerView:
    """Read the whole offsets topic and rebuild ``group_id``'s history, priced."""
    decoder = RecordDecoder(schema_set())
    records, rows = [], []
    for raw in sorted(read_offsets_topic({"bootstrap.servers": bootstrap}), key=lambda r: (r.partition, r.offset)):
        record = decoder.decode(raw.key, raw.value)
        if isinstance(record, Skipped):
            continue
        records.append(record)
        row = record_row(record, raw.partition, raw.offset, raw.timestamp_ms)
        if row["group_id"] == group_id:
            rows.append(row)
    names = {**ids_from_admin(admin), **ids_from_records(records)}
    generations = classic_generations(rows)
    changes = classic_ownership_changes(generations) + consumer_ownership_changes(rows, names)
    commits = kept_commits(commit_rows(rows), changes)
    log_ends = look_up_log_ends(bootstrap, log_end_requests(changes, commits))
    view = BrokerView(group_id, rows, generations, consumer_events(rows, names), changes, commits, log_ends)
    view.handoffs = broker_handoffs(changes, commits, log_ends)
    broker_causes(view.handoffs, generations, view.events, changes, commits)
    return view


@dataclass
class Match:
    """A ground-truth handoff and the broker's handoffs it spans."""

    truth: dict[str, Any]
    chain: list[dict[str, Any]]

    def total(self, figure: str) -> float | None:
        values = [h[figure] for h in self.chain]
        return None if any(v is None for v in values) else sum(values)

    @property
    def duplicates_inside(self) -> bool:
        upper = self.total("duplicates_upper")
        return self.total("duplicates") <= self.truth["duplicates"] <= (float("inf") if upper is None else upper)

    @property
    def pause_inside(self) -> bool:
        upper = self.total("pause_upper_s")
        return (self.total("pause_s") - CLOCK_SLACK_S <= self.truth["pause_s"]
                <= (float("inf") if upper is None else upper) + CLOCK_SLACK_S)


def _ids_of(truth: dict[str, Any]) -> dict[str, set[str]]:
    return {p["process"]: set(p["member_ids"]) for p in truth["processes"]}


def _chain(truth_handoff: dict[str, Any], handoffs: list[dict[str, Any]], ids: dict[str, set[str]]) -> list[dict]:
    """The broker's handoffs of the truth's partition from its previous owner's process to its next one's:
    the first from the previous owner assigned after its last record, then on until the next owner."""
    last_ms = truth_handoff["at_wall_ns"] // 1_000_000
    mine = sorted((h for h in handoffs if (h["topic"], h["partition"]) == (truth_handoff["topic"],
                                                                          truth_handoff["partition"])),
                  key=lambda h: h["assigned_ms"])
    prev, nxt = ids[truth_handoff["prev_process"]], ids[truth_handoff["next_process"]]
    start = next((i for i, h in enumerate(mine) if h["prev_member_id"] in prev and h["assigned_ms"] >= last_ms), None)
    if start is None:
        return []
    chain = []
    for h in mine[start:]:
        if chain and h["prev_member_id"] != chain[-1]["next_member_id"]:
            return []
        chain.append(h)
        if h["next_member_id"] in nxt:
            return chain
    return []


def compare(run_dir: Path, handoffs: list[dict[str, Any]]) -> list[Match]:
    """Every ground-truth handoff of the run beside the broker's ``handoffs`` (a ``BrokerView``'s, or gold's
    rows of the run's group; an empty chain: they show none)."""
    truth = json.loads((Path(run_dir) / "truth.json").read_text())
    ids = _ids_of(truth)
    return [Match(h, _chain(h, handoffs, ids)) for h in truth["handoffs"]]


@dataclass
class Summary:
    """What ``compare`` found for one run, as the report prints it."""

    handoffs: int
    matched: int
    unwritten: int  # a member's handoffs to itself the coordinator wrote nothing for (it rejoined, nothing changed)
    inside: int  # both figures within the broker's bounds
    duplicates_width: float  # the mean of duplicates_upper - duplicates over the matched handoffs with an upper bound
    pause_width_s: float
    open_pause: int  # matched handoffs whose pause has no upper bound yet
    causes_exact: tuple[int, int]  # (right, of) the exact causes of the handoffs a timeline action explains
    causes_probable: tuple[int, int]
    formation: tuple[int, int]  # (called start, of) the handoffs no action explains (the truth's ``start``)
    pause_error_s: float | None  # KIP-848 revocations: the most |pause_s - truth| (the point figure)
    estimate_error_s: float | None  # ... and the most |pause_estimate_s - truth|

    def line(self) -> str:
        def most(x: float | None) -> str:
            return "-" if x is None else f"{x:.3f}"
        return (f"{self.inside}/{self.handoffs} inside (matched {self.matched}, unwritten {self.unwritten}), widths "
                f"{self.duplicates_width:.1f} records, {self.pause_width_s:.2f} s ({self.open_pause} open), causes "
                f"exact {self.causes_exact[0]}/{self.causes_exact[1]}, probable {self.causes_probable[0]}/"
                f"{self.causes_probable[1]}, formation {self.formation[0]}/{self.formation[1]}, KIP-848 pause "
                f"error {most(self.pause_error_s)} s, estimate {most(self.estimate_error_s)} s")


def _widths(matched: list[Match], low: str, high: str) -> tuple[float, int]:
    spans = [m.total(high) - m.total(low) for m in matched if m.total(high) is not None]
    return (sum(spans) / len(spans) if spans else 0.0), len(matched) - len(spans)


def summarize(matches: list[Match]) -> Summary:
    """The run's figures: containment, widths, causes, KIP-848 pause errors. Causes are checked where
    a timeline action explains the handoff: the truth calls the others ``start`` (whatever came
    before the first action, the group forming and settling as the scenario judged it), which the log
    shows as joins: ``start`` where they came together, else a ``scale_out`` (``formation`` counts them)."""
    matched = [m for m in matches if m.chain]
    timed = [m for m in matched if m.truth["cause"] != "start"]
    formed = [m for m in matched if m.truth["cause"] == "start"]

    def causes(confidence: str) -> tuple[int, int]:
        mine = [m for m in timed if m.chain[-1]["cause_confidence"] == confidence]
        return sum(m.chain[-1]["cause"] == m.truth["cause"] for m in mine), len(mine)

    told = [m for m in matched if len(m.chain) == 1 and m.chain[0]["protocol"] == "consumer"
            and m.chain[0]["broker_release"] == "revoked"]
    return Summary(
        len(matches), len(matched),
        sum(not m.chain and m.truth["prev_process"] == m.truth["next_process"] for m in matches),
        sum(m.duplicates_inside and m.pause_inside for m in matched),
        _widths(matched, "duplicates", "duplicates_upper")[0], *_widths(matched, "pause_s", "pause_upper_s"),
        causes("exact"), causes("probable"),
        (sum(m.chain[-1]["cause"] == "start" for m in formed), len(formed)),
        max((abs(m.chain[0]["pause_s"] - m.truth["pause_s"]) for m in told), default=None),
        max((abs(m.chain[0]["pause_estimate_s"] - m.truth["pause_s"]) for m in told
             if m.chain[0]["pause_estimate_s"] is not None), default=None))
