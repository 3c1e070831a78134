"""The resumable walk a tail runs, on the records the embedded broker wrote for real groups: fed at
once it writes what the history functions write; stopped after any record and resumed from its
state (through JSON, as the lake keeps it), it writes the same rows, none twice
(tests/support/offsets_capture.py)."""
from __future__ import annotations

import orjson

from pipelines.broker_log.classic_history import classic_generations, classic_ownership_changes
from pipelines.broker_log.commit_window import commit_rows, kept_commits, merged
from pipelines.broker_log.consumer_history import consumer_events, consumer_ownership_changes
from pipelines.broker_log.group_history import OUTPUTS, GroupHistory
from pipelines.broker_log.partition_walk import PartitionWalk
from pipelines.broker_log.schema_set import schema_set

SCENARIOS = ("eager", "cooperative", "static", "consumer", "static_consumer")


def _walked(rows: list[dict], names: dict[str, str], stops: set[int] = frozenset()) -> dict[str, list[dict]]:
    """The group's rows fed one by one; after each index in ``stops`` the walk ends and a new one
    goes on from its state, read back from JSON."""
    out: dict[str, list[dict]] = {name: [] for name in OUTPUTS}
    history = GroupHistory(rows[0]["group_id"], names)
    for i, row in enumerate(rows):
        history.feed(row)
        for name, made in history.taken().items():
            out[name] += made
        if i in stops:
            history = GroupHistory(rows[0]["group_id"], names, orjson.loads(orjson.dumps(history.state())))
    out["commits"] = merged(out["commits"])
    return out


def test_the_walk_writes_what_the_history_functions_write(offsets_capture, captured_rows):
    names = offsets_capture.topic_ids
    for scenario in SCENARIOS:
        rows = captured_rows[scenario]
        walked = _walked(rows, names)
        generations = classic_generations(rows)
        changes = classic_ownership_changes(generations) + consumer_ownership_changes(rows, names)
        assert walked["generations"] == generations, scenario
        assert walked["events"] == consumer_events(rows, names), scenario
        assert walked["changes"] == changes, scenario
        assert walked["commits"] == kept_commits(commit_rows(rows), changes), scenario
        assert walked["changes"] and walked["commits"], scenario


def test_a_walk_stopped_after_any_record_and_resumed_writes_the_same_rows(offsets_capture, captured_rows):
    names = offsets_capture.topic_ids
    for scenario in SCENARIOS:
        rows = captured_rows[scenario]
        whole = _walked(rows, names)
        assert _walked(rows, names, set(range(len(rows)))) == whole, scenario
        for stop in range(len(rows)):
            assert _walked(rows, names, {stop}) == whole, (scenario, stop)


def _partition_rows(records, start: dict[int, int], end: dict[int, int], states: list[dict]) -> dict[int, list[dict]]:
    """The rows a task gets per partition: the stored states, then the raw records of [start, end)."""
    by_partition: dict[int, list[dict]] = {}
    for state in states:
        by_partition.setdefault(state["offsets_partition"], []).append({**state, "offset": None})
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        if start.get(r.partition, 0) <= r.offset < end.get(r.partition, 1 << 62):
            by_partition.setdefault(r.partition, []).append(
                {"offsets_partition": r.partition, "offset": r.offset, "timestamp_ms": r.timestamp_ms,
                 "key": r.key, "value": r.value, "group_id": None, "state": None, "through_offset": None})
    return by_partition


def _run(records, names, start, end, states) -> tuple[dict[str, list[dict]], list[dict]]:
    """One run over every partition: its rows by kind, the states it leaves."""
    out: dict[str, list[dict]] = {}
    for rows in _partition_rows(records, start, end, states).values():
        for row in PartitionWalk(schema_set(), names).walk(iter(rows)):
            kind = next(k for k, v in row.items() if v is not None)
            out.setdefault(kind, []).append(row[kind])
    return out, out.pop("state", [])


def _in_log_order(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["offsets_partition"], r["offset"]))


def test_partition_walks_in_two_runs_write_what_one_run_writes(offsets_capture):
    records, names = offsets_capture.records, offsets_capture.topic_ids
    once, states = _run(records, names, {}, {}, [])
    middle = {p: max(r.offset for r in records if r.partition == p) // 2 for p in {r.partition for r in records}}
    first, between = _run(records, names, {}, middle, [])
    second, after = _run(records, names, middle, {}, between)
    for kind in ("generations", "events", "changes"):
        assert _in_log_order(first.get(kind, []) + second.get(kind, [])) == _in_log_order(once[kind]), kind
    assert merged(first["commits"] + second["commits"]) == merged(once["commits"])
    assert sorted(after, key=lambda s: s["group_id"]) == sorted(states, key=lambda s: s["group_id"])
    groups = set(offsets_capture.groups.values())
    assert groups <= {s["group_id"] for s in states}
    decoded = sum(c["records"] for c in once["count"] if c["outcome"] == "decoded")
    assert decoded == len(records), "every record the broker wrote is read"
