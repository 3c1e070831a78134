"""The per-event ownership pass as it was before gold became a per-partition fold (git
d472d55, ``pipelines/gold/ownership.py``): the reference the fold is checked against on every
scenario (issue 23: keep it until the new one equals it everywhere).

It is also the pure tests' gold of a small group (``gold_of_group``): gold cuts events into
facts in Spark only (``pipelines.gold.facts``), so the fold has no Spark-free input, and the
tests of handoffs, episodes, members and rules take their intervals from here (equal to the
fold's: tests/pipelines/test_gold_fold.py, tests/e2e/test_gold_slices.py)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from consumer_agent.contract import OFFSET_UNKNOWN, STALE_STATE
from pipelines.catalog import OWNERSHIP
from pipelines.gold.group_pass import body_of, group_gold
from pipelines.gold.handoffs import handoffs_of

RELEASING = {"partitions_revoked": "revoked", "partitions_lost": "lost"}
# Per-partition facts, most of the telemetry: of these events only the agent, the time,
# the sequence number and the body are read.
PARTITION_FACTS = ("first_fetch", "progress", "commit")
INTERVAL_COLUMNS = OWNERSHIP.column_names()


def _known(offset: int | None) -> int | None:
    return None if offset is None or offset == OFFSET_UNKNOWN else offset


def _open(event: dict[str, Any], topic: str, partition: int) -> dict[str, Any]:
    row = dict.fromkeys(INTERVAL_COLUMNS)
    row.update(cluster_id=event["cluster_id"], group_id=event["group_id"], topic=topic, partition=partition,
               agent_id=event["agent_id"], member_id=event["member_id"], group_instance_id=event["group_instance_id"],
               host=event["host"],
               client_id=event["client_id"], generation=event["generation"], assign_event_id=event["event_id"],
               assigned_ms=event["event_time_ms"], processed=0, commit_in_revoke=False)
    return row


def ownership_intervals(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ownership intervals of one group. ``events`` carry the envelope and ``body`` (dict or JSON text)."""
    ordered = sorted(events, key=lambda e: (e["event_time_ms"], e["agent_id"], e["seq"]))
    intervals: list[dict[str, Any]] = []
    current: dict[tuple[str, int], dict[str, Any]] = {}        # partition -> the latest interval
    latest_of: dict[tuple[str, str, int], dict[str, Any]] = {}  # (agent, topic, partition) -> its latest interval
    commits: list[tuple[dict[str, Any], int, int]] = []         # (interval, time, offset)
    successor: dict[int, dict[str, Any]] = {}                   # id(interval) -> the next one of its partition
    stalled: set[str] = set()  # agents past max.poll.interval.ms whose partitions the group took, until released
    for e in ordered:
        body = body_of(e)
        kind, agent, t = e["kind"], e["agent_id"], e["event_time_ms"]
        if kind == "partitions_assigned":
            stalled.discard(agent)
            for ps in body["partitions"]:
                key = (ps["topic"], ps["partition"])
                before = current.get(key)
                if before is not None and before["release_kind"] is None:
                    before["release_kind"] = "unreleased"
                row = _open(e, *key)
                if before is not None:
                    before["next_assigned_ms"] = t
                    successor[id(before)] = row
                intervals.append(row)
                current[key] = row
                latest_of[(agent, *key)] = row
        elif kind in RELEASING:
            stalled.discard(agent)
            for ps in body["partitions"]:
                row = latest_of.get((agent, ps["topic"], ps["partition"]))
                if row is None or row["release_kind"] not in (None, "unreleased"):
                    continue
                cor = body.get("commit_on_revoke") or {}
                row.update(release_kind=RELEASING[kind], release_event_id=e["event_id"], released_ms=t,
                           callback_ms=body["callback_ms"], commit_in_revoke=bool(cor.get("committed")),
                           position_at_release=_known(ps["position"]),
                           last_processed_at_release=_known(ps["last_processed_offset"]),
                           committed_at_release=_known(ps["committed_offset"]),
                           handed_out_at_release=ps.get("handed_out"))
        elif kind == "first_fetch":
            row = latest_of.get((agent, body["topic"], body["partition"]))
            if row is not None and row["first_fetch_ms"] is None:
                row.update(first_fetch_ms=t, first_fetch_offset=_known(body["offset"]),  # (.get: lakes written
                           first_fetch_window_ms=body.get("window_ms") or 0.0,      # before the two fields)
                           first_fetch_timestamp_ms=body.get("timestamp_ms"))
        elif kind == "state_transition" and body["to_state"] == STALE_STATE:
            stalled.add(agent)
        elif kind == "progress" and agent not in stalled:  # a stalled member's progress is not its owner's
            for ps in body["partitions"]:
                row = latest_of.get((agent, ps["topic"], ps["partition"]))
                if row is None:
                    continue
                row["processed"] += ps["processed"]
                if row["first_progress_log_end"] is None and ps["lag"] is not None and _known(ps["position"]):
                    row.update(first_progress_log_end=ps["position"] + ps["lag"], first_progress_log_end_ms=t)
                row.update(last_progress_ms=t, last_progress_processed_offset=_known(ps["last_processed_offset"]),
                           last_progress_lag=ps["lag"], last_progress_position=_known(ps["position"]))
                if body.get("cause", "timer") == "timer":  # a tick at a first record or a poll gap comes early
                    row["max_progress_interval_ms"] = max(row["max_progress_interval_ms"] or 0.0, body["interval_ms"])
                if body.get("next_due_ms") is not None:
                    row["progress_due_ms"] = max(row["progress_due_ms"] or 0.0, body["next_due_ms"])
                if ps["last_processed_offset"] >= 0 and ps["committed_offset"] >= 0:
                    row["uncommitted_sum"] = (row["uncommitted_sum"] or 0) + max(
                        ps["last_processed_offset"] + 1 - ps["committed_offset"], 0)
                    row["uncommitted_samples"] = (row["uncommitted_samples"] or 0) + 1
                if ps["processed"] > 0:
                    moved = int(t - body["interval_ms"])
                    row["last_record_after_ms"] = max(row["last_record_after_ms"] or moved, moved)
                if body["interval_ms"] > 0:
                    rate = ps["processed"] / (body["interval_ms"] / 1000.0)
                    row["max_rate_per_s"] = max(row["max_rate_per_s"] or 0.0, rate)
        elif kind == "commit" and body["error"] is None:
            for o in body["offsets"]:
                row = latest_of.get((agent, o["topic"], o["partition"]))
                if row is not None and o["error"] is None and _known(o["offset"]) is not None:
                    commits.append((row, t, o["offset"]))
                    nxt = successor.get(id(row))
                    read = nxt is not None and nxt["first_fetch_ms"] is not None and nxt["first_fetch_ms"] < t
                    if body["in_revoke"] and not read:  # after the next owner read: not this interval's commit
                        row["commit_in_revoke"] = True
    for row in intervals:
        nxt = successor.get(id(row))
        row["next_first_fetch_ms"] = nxt["first_fetch_ms"] if nxt else None
    for row, t, offset in commits:
        deadline = row["next_first_fetch_ms"]
        if deadline is None or t <= deadline:
            row["committed_max"] = max(row["committed_max"] if row["committed_max"] is not None else OFFSET_UNKNOWN,
                                       offset)
            row["last_commit_ms"] = max(row["last_commit_ms"] or t, t)
    return intervals


def gold_of_group(events: list[dict[str, Any]], gap_s: float) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """(ownership intervals, handoffs, episodes, members) of one group from all its events: the
    intervals above, then gold's own handoffs and group pass."""
    return group_of(events, gap_s)[:4]


def group_of(events: list[dict[str, Any]], gap_s: float) -> tuple[list[dict], list[dict], list[dict], list[dict],
                                                                    list[dict]]:
    """``gold_of_group`` and the group's coverage per hour (``pipelines.gold.unseen``)."""
    intervals = ownership_intervals(events)
    last_seen: dict[str, int] = {}
    for e in events:
        last_seen[e["agent_id"]] = max(e["event_time_ms"], last_seen.get(e["agent_id"], e["event_time_ms"]))
    handoffs, episodes, members, _, coverage, _ = group_gold(events, handoffs_of(intervals), last_seen, gap_s,
                                                             intervals)
    return intervals, handoffs, episodes, members, coverage
