"""Scenario members on the JVM (issue 40): the Java agent's members keep the Python members' truth log,
and gold equals that truth handoff by handoff, as it does for Python members.

The short run (default suite, ~30 s): a small mixed group (two Java members, one Python one) on the
session broker; each member process's truth log is held against its own telemetry, call for call.
The slow test (`./lens test -m slow tests/e2e/test_java_members.py`, one pipeline run over five
scenario runs, 16-20 min on a shared 2-core machine): built-ins with every member on the JVM under range,
cooperative-sticky (static members) and the consumer protocol, and two mixed Java + Python groups
(turbulent-minute's is expected to fail on a gold bug: tests/support/java_members.py).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.runner import RunOptions, run_scenario
from lens_scenarios.spec import parse
from lens_scenarios.truth_log import read_deliveries, read_events, read_meta
from tests.support.gold_matching import gold_for_run, mismatches
from tests.support.java_members import PLAN
from tests.support.telemetry_log import read_to_end

CALLBACKS = {"partitions_assigned": "assign", "partitions_revoked": "revoke", "partitions_lost": "lost"}
SHORT = {"name": "java-short", "topics": [{"name": "orders", "partitions": 4}],
         "members": [{"name": "j1", "runtime": "java"}, {"name": "p1"}], "duration_s": 8,
         "timeline": [{"at": 1, "action": "scale_out", "members": [{"name": "j2", "runtime": "java"}]},
                      {"at": 4, "action": "scale_in", "members": ["j1"]}]}


def _telemetry_by_process(kafka, manifest: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """This run's telemetry, each member process's events in the order its agent numbered them."""
    prefix = f"{manifest['run_id']}-"
    by_process = defaultdict(list)
    for event in sorted(read_to_end(kafka.bootstrap_servers, manifest["telemetry_topic"]), key=lambda e: e["seq"]):
        if event["client_id"].startswith(prefix):
            by_process[event["client_id"][len(prefix):]].append(event)
    return by_process


def test_a_java_members_truth_log_is_what_its_agent_reported(kafka, tmp_path):
    """Per process (Java and Python alike): the callbacks its truth log holds are the ones its agent
    reported, in order, with the same partitions and member id; each reading start is the agent's
    first_fetch; what the agent calls processed at a revoke is the last record truth saw; each
    offset committed is after a record the process read."""
    result = run_scenario(parse(SHORT, source="test"), RunOptions(out_dir=tmp_path, bootstrap=kafka.bootstrap_servers,
                                                                  telemetry_topic=f"java-short-{tmp_path.name}"))
    assert {p["process"]: p["runtime"] for p in result.manifest["processes"]} == \
        {"j1.1": "java", "p1.1": "python", "j2.1": "java"}
    telemetry = _telemetry_by_process(kafka, result.manifest)
    for meta in read_meta(result.run_dir):
        events = telemetry[meta.process]
        truth = [e for e in read_events(result.run_dir, meta) if e.kind in CALLBACKS.values()]
        reported = [e for e in events if e["kind"] in CALLBACKS]
        assert [(e.kind, sorted(e.partitions), e.member_id) for e in truth] == \
            [(CALLBACKS[e["kind"]], sorted((p["topic"], p["partition"]) for p in e["body"]["partitions"]),
              e["member_id"]) for e in reported], meta.process
        deliveries = list(read_deliveries(result.run_dir, meta))
        assert deliveries, meta.process
        starts = defaultdict(list)  # each assignment's first record, per partition
        for event in truth:
            for tp in event.partitions if event.kind == "assign" else ():
                after = [d for d in deliveries if (d.topic, d.partition) == tp and d.mono_ns > event.mono_ns]
                if after:
                    starts[tp].append(after[0].offset)
        fetched = defaultdict(list)
        for e in events:
            if e["kind"] == "first_fetch":
                fetched[(e["body"]["topic"], e["body"]["partition"])].append(e["body"]["offset"])
        assert fetched == starts, meta.process
        for event, report in zip(truth, reported):
            for state in report["body"]["partitions"] if event.kind == "revoke" else ():
                read = [d.offset for d in deliveries if (d.topic, d.partition) == (state["topic"], state["partition"])
                        and d.mono_ns < event.mono_ns]
                assert state["last_processed_offset"] == (max(read) if read else -1001), (meta.process, state)
        offsets = {(d.topic, d.partition, d.offset) for d in deliveries}
        commits = [o for e in events if e["kind"] == "commit" and e["body"]["error"] is None
                   for o in e["body"]["offsets"] if o["offset"] >= 0]  # librdkafka lists unread partitions, -1001
        assert commits and all((o["topic"], o["partition"], o["offset"] - 1) in offsets for o in commits), meta.process


@pytest.mark.slow
@pytest.mark.timeout(2100)  # the fixture's five runs (~5 min) and a pipeline run, on 2 cores others share
@pytest.mark.parametrize("scenario", list(PLAN))
def test_gold_equals_truth_for_java_members(landed_java, scenario):
    """`./lens test -m slow tests/e2e/test_java_members.py`: every handoff truth shows is in gold with the same
    duplicates (bracketed after a crash), pause and cause, as tests/e2e/test_gold_vs_truth.py holds Python
    members to."""
    run = landed_java["runs"][scenario]
    runtimes = {p["runtime"] for p in run.manifest["processes"]}
    assert runtimes == ({"java"} if PLAN[scenario][1] == "all" else {"java", "python"})
    truth = GroundTruth.load(run.run_dir)
    assert any(h.moved for h in truth.handoffs) or scenario == "static-rolling-restart", "scenario moved nothing"
    assert truth.handoffs
    problems = mismatches(truth.handoffs, gold_for_run(landed_java, run.manifest["run_id"]))
    assert not problems, "\n".join(problems)
