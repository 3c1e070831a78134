"""The partial-adoption built-in on the session broker: plain members are in the truth, not in telemetry.

One run (module-scoped, ~1 min) of three instrumented members and plain ones (p1 restarts,
leaves; p2 joins) under eager range, with a telemetry topic of its own so reading it back
finds only this run's events.
"""
from __future__ import annotations

import json
import uuid

import pytest

from lens_scenarios.runner import RunOptions, RunResult, run_scenario
from lens_scenarios.spec import load
from tests.support.telemetry_log import read_to_end

PLAIN = {"p1", "p2"}


@pytest.fixture(scope="module")
def result(kafka, tmp_path_factory) -> RunResult:
    return run_scenario(load("partial-adoption"), RunOptions(
        assignor="range", commit="batch", out_dir=tmp_path_factory.mktemp("runs"), bootstrap=kafka.bootstrap_servers,
        telemetry_topic=f"partial-adoption-{uuid.uuid4().hex[:6]}"))


@pytest.fixture(scope="module")
def truth_json(result) -> dict:
    return json.loads((result.run_dir / "truth.json").read_text())


def test_the_truth_says_who_ran_the_agent_and_holds_the_plain_members_records(result, truth_json):
    assert result.manifest["settled"]
    processes = {p["process"]: p for p in truth_json["processes"]}
    assert set(processes) == {"m1.1", "m2.1", "m3.1", "p1.1", "p1.2", "p2.1"}
    assert {name for name, p in processes.items() if not p["instrumented"]} == {"p1.1", "p1.2", "p2.1"}
    assert all(p["member_ids"] for p in processes.values())  # every process was assigned something
    delivered = {p: sum(1 for d in result.truth.deliveries if d.process == p) for p in processes}
    assert all(delivered[p] > 0 for p in ("p1.1", "p1.2", "p2.1")), delivered
    plain_handoffs = [h for h in truth_json["handoffs"] if not (h["prev_instrumented"] and h["next_instrumented"])]
    # p1's restart and leave hand its partitions on, p2's join takes some: all in the truth, from the record logs
    assert {h["prev_process"] for h in plain_handoffs} >= {"p1.1", "p1.2"}
    assert "p2.1" in {h["next_process"] for h in plain_handoffs}
    left = [h for h in plain_handoffs if h["prev_process"] == "p1.2" and h["cause"] == "scale_in"]
    assert left and all(h["next_instrumented"] and h["pause_s"] >= 0 and h["duplicates"] >= 0 for h in left)
    assert sum(h["duplicates"] for h in plain_handoffs) > 0  # eager range, batch commits: re-reads around them


def test_no_telemetry_event_comes_from_or_names_a_plain_member(result, truth_json, kafka):
    prefix = f"{result.manifest['run_id']}-"
    plain = {p["process"] for p in truth_json["processes"] if not p["instrumented"]}
    plain_ids = {i for p in truth_json["processes"] if not p["instrumented"] for i in p["member_ids"]}
    events = read_to_end(kafka.bootstrap_servers, result.manifest["telemetry_topic"])  # this run's own topic
    senders = {e["client_id"][len(prefix):] for e in events}
    assert senders == {"m1.1", "m2.1", "m3.1"}
    assert not plain & senders
    assert {e["member_id"] for e in events if e.get("member_id")}.isdisjoint(plain_ids)
    assert not [e for e in events if any(i in json.dumps(e) for i in plain_ids | {prefix + p for p in plain})]


def _check_coverage(result: RunResult, truth_json: dict) -> None:
    """The truth's coverage against a sum over its ownership spans, and the spans against the record logs."""
    ownership, coverage = truth_json["ownership"], truth_json["coverage"]
    instrumented = sum(h["seconds"] for h in ownership if h["instrumented"])
    owned = sum(h["seconds"] for h in ownership)
    assert 0 < coverage["coverage"] < 1
    assert coverage["coverage"] == pytest.approx(instrumented / owned, abs=1e-5)
    assert coverage["group_id"] == result.manifest["group_id"]
    hours = coverage["by_hour"]
    assert sum(h["owned_s"] for h in hours) == pytest.approx(owned, abs=0.01 * len(hours) + 0.01)
    # every record a process read falls inside a span in which it held that partition
    spans: dict[tuple, list[tuple[int, int]]] = {}
    for h in result.truth.held:
        spans.setdefault((h.process, h.topic, h.partition), []).append((h.start_mono_ns, h.end_mono_ns))
    outside = [d for d in result.truth.deliveries
               if not any(a <= d.mono_ns <= b for a, b in spans.get((d.process, d.topic, d.partition), []))]
    assert not outside, outside[:3]
    # Kafka never gives one partition to two live members: a revoke ends before the next assign starts
    by_tp: dict[tuple, list[tuple[int, int]]] = {}
    for h in result.truth.held:
        by_tp.setdefault((h.topic, h.partition), []).append((h.start_mono_ns, h.end_mono_ns))
    for tp, ivs in by_tp.items():
        ivs.sort()
        assert all(b[0] >= a[1] for a, b in zip(ivs, ivs[1:])), tp


def test_coverage_is_the_instrumented_share_of_the_held_partition_time(result, truth_json):
    _check_coverage(result, truth_json)


@pytest.mark.slow
@pytest.mark.parametrize("assignor", ["cooperative-sticky", "consumer"])
def test_coverage_under_incremental_protocols(kafka, tmp_path, assignor):
    """Incremental assign/revoke callbacks make the same spans (~1 min per protocol):
    PYTHONPATH=$PWD .venv/bin/python -m pytest -m slow tests/scenarios/test_partial_adoption.py"""
    run = run_scenario(load("partial-adoption"), RunOptions(assignor=assignor, commit="batch", out_dir=tmp_path,
                                                            bootstrap=kafka.bootstrap_servers))
    _check_coverage(run, json.loads((run.run_dir / "truth.json").read_text()))
