"""Commit-on-revoke in the Java agent (KIP-957's case): records processed on a thread pool are never processed
again by the next owner in a graceful handoff.

PoolMembers.java (beside this file) runs members a, b, c of one group on InstrumentedConsumers with
``lens.processing=explicit``: each hands every record to a pool of 4 workers that sleep 0-6 ms, log
(partition, offset, member) and markProcessed. A producer writes throughout; b joins, c joins, a closes,
b closes, c reads to the end. The application commits nothing itself, so the only commits are the agent's:
without commit-on-revoke every handoff re-reads (the control run shows it, so the check can fail: thousands
of records processed twice in a run of about 9,000).

The default suite runs it once under classic (eager range, about 25 s); the slow suite runs the control and
20 runs in a row under classic and under the consumer protocol:
``./lens test -m slow tests/jvm_agent/test_commit_on_revoke.py``.
"""
from __future__ import annotations

import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from lens_runtime.jvm_agent_build import agent_classpath, ensure_agent_jar
from tests.support.telemetry_log import TelemetryLog

PROGRAM = Path(__file__).with_name("PoolMembers.java")
PARTITIONS = 6


@dataclass(frozen=True)
class Run:
    """One run of PoolMembers: who processed each record, and each member's agent id."""

    processed_by: dict[tuple[int, int], list[str]]
    agents: dict[str, str]

    def duplicates(self) -> dict[tuple[int, int], list[str]]:
        """Records processed by two members or more."""
        return {record: members for record, members in self.processed_by.items() if len(set(members)) > 1}


def _run(kafka, unique: str, tmp_path: Path, commit_on_revoke: bool, protocol: str = "classic") -> tuple[Run, str]:
    ensure_agent_jar()
    name = f"cor-{unique}-{'on' if commit_on_revoke else 'off'}"
    topic = kafka.create_topic(name, partitions=PARTITIONS)
    telemetry = f"{name}-telemetry"
    log = tmp_path / f"{name}.log"
    done = subprocess.run(["java", "-cp", agent_classpath(), str(PROGRAM), kafka.bootstrap_servers, topic,
                           str(PARTITIONS), name, telemetry, protocol, str(commit_on_revoke).lower(), str(log)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    processed_by: dict[tuple[int, int], list[str]] = defaultdict(list)
    agents: dict[str, str] = {}
    for line in log.read_text().splitlines():
        if line.startswith("agents "):
            agents = dict(pair.split("=") for pair in line.split()[1:])
        else:
            partition, offset, member = line.split()
            processed_by[(int(partition), int(offset))].append(member)
    return Run(dict(processed_by), agents), telemetry


def _assert_safe_handoffs(kafka, unique: str, tmp_path: Path, protocol: str = "classic") -> None:
    run, telemetry = _run(kafka, unique, tmp_path, commit_on_revoke=True, protocol=protocol)
    # Every record the producer wrote was processed (PoolMembers waits for it); offsets are gapless.
    for p in range(PARTITIONS):
        offsets = sorted(o for (q, o) in run.processed_by if q == p)
        assert offsets and offsets == list(range(len(offsets))), p
    assert set().union(*(set(m) for m in run.processed_by.values())) == {"a", "b", "c"}
    assert run.duplicates() == {}

    # What the agent did is in the telemetry: each revoke held, drained and committed, and its commits say so.
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)  # validates every event against the v1 schema
    try:
        log.wait_for(lambda lg: all(any(e["kind"] == "state_transition" and e["body"]["reason"] == "close"
                                        for e in lg.of(agent)) for agent in run.agents.values()),
                     timeout=60, what="every member's close")
        waits = []
        for role, agent in run.agents.items():
            revokes = [e["body"] for e in log.of(agent, "partitions_revoked") if e["body"]["partitions"]]
            assert revokes, role
            for body in revokes:
                hold = body["commit_on_revoke"]
                assert hold is not None and hold["committed"] and not hold["timed_out"], (role, hold)
                assert hold["error"] is None
                waits.append(hold["waited_ms"])
            # Synchronous, in a revoke, or the one close() makes first (the Python agent's rule too).
            closing = next(e["seq"] for e in log.of(agent, "state_transition") if e["body"]["reason"] == "close")
            commits = log.of(agent, "commit")
            assert commits and all(e["body"]["sync"] and (e["body"]["in_revoke"] or e["seq"] > closing)
                                   for e in commits), role
    finally:
        log.close()
    # The pool had work in flight at a revoke (a's first poll hands it the backlog written while the group formed).
    assert max(waits) > 1.0, waits


def test_commit_on_revoke_hands_over_a_thread_pools_work_without_duplicates(kafka, unique, tmp_path):
    _assert_safe_handoffs(kafka, unique, tmp_path)


@pytest.mark.slow
def test_without_commit_on_revoke_the_same_program_processes_records_twice(kafka, unique, tmp_path):
    run, _ = _run(kafka, unique, tmp_path, commit_on_revoke=False)
    assert len(run.duplicates()) > 0


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
@pytest.mark.parametrize("attempt", range(20))
def test_twenty_runs_in_a_row_without_duplicates(kafka, unique, tmp_path, protocol, attempt):
    _assert_safe_handoffs(kafka, unique, tmp_path, protocol)
