"""The broker's bounds and causes against ground truth: a built-in scenario on the session broker,
its ``__consumer_offsets`` read back, history rebuilt, handoffs priced and caused from the log
alone (tests/support/broker_truth.py; no Spark), each ground-truth handoff checked:

- inside the broker's bounds, duplicates and pause (a chain of the broker's handoffs where an owner
  in between read nothing, which the truth, cut from the records read, skips);
- its cause right where the log says it exactly (where a timeline action explains the handoff: the
  truth calls the rest ``start``, the group forming as the scenario judged it, which the log shows
  as joins, together or apart);
- under KIP-848, a revocation's pause (the point figure, and the estimate) within one heartbeat of
  the truth (the embedded broker's: 1 s).

The default suite plays one short scenario (KIP-848, plain members); every built-in, with and
without the agent on its members (enforce-rebalance with it only: the plain client cannot enforce),
under an eager, a cooperative and the consumer protocol, is the slow tier (about an hour; it prints
each run's figures):

    PYTHONPATH=$PWD .venv/bin/python -m pytest -m slow -s tests/broker_log/test_broker_truth.py
"""
from __future__ import annotations

from pathlib import Path

import pytest

from lens_runtime.kafka_broker import FAST_TEST_SETTINGS
from lens_scenarios.runner import RunOptions, run_scenario
from lens_scenarios.spec import builtin_names, load, without_agent
from tests.support.broker_truth import Match, Summary, broker_view, compare, summarize

HEARTBEAT_S = int(FAST_TEST_SETTINGS["group.consumer.heartbeat.interval.ms"]) / 1000


def _said(m: Match) -> tuple:
    """A handoff outside the bounds, as its failure names it: the truth's figures and the chain's bounds."""
    t = m.truth
    return (t["partition"], t["prev_process"], t["next_process"], t["duplicates"], round(t["pause_s"], 3),
            [(h["duplicates"], h["duplicates_upper"], h["pause_s"], h["pause_upper_s"], h["protocol"],
              h["change_kind"], h["broker_release"], h["stopped_after_ms"], h["stopped_by_ms"], h["assigned_ms"])
             for h in m.chain])


def _checked(kafka, tmp_path: Path, name: str, assignor: str, agent: bool) -> Summary:
    scenario = load(name) if agent else without_agent(load(name))
    run = run_scenario(scenario, RunOptions(assignor=assignor, out_dir=tmp_path, bootstrap=kafka.bootstrap_servers))
    view = broker_view(kafka.bootstrap_servers, run.manifest["group_id"], kafka.admin())
    matches = compare(run.run_dir, view.handoffs)
    summary = summarize(matches)
    print(f"\n{name} {assignor} {'agent' if agent else 'plain'}: {summary.line()}")
    # a member that revokes and rejoins with nothing changed (an eager non-leader's enforce_rebalance) gets its
    # partitions back in the same generation: the coordinator writes nothing, and only its own handoffs are so
    missing = [m.truth for m in matches if not m.chain and m.truth["prev_process"] != m.truth["next_process"]]
    assert not missing, f"the log shows no handoff for {missing[:3]}"
    outside = [_said(m) for m in matches if m.chain and not (m.duplicates_inside and m.pause_inside)]
    assert not outside, outside[:3]
    assert summary.causes_exact[0] == summary.causes_exact[1], [
        (m.truth["cause"], m.chain[-1]["cause"]) for m in matches if m.chain
        and m.chain[-1]["cause_confidence"] == "exact" and m.chain[-1]["cause"] != m.truth["cause"]]
    if summary.pause_error_s is not None:
        assert summary.pause_error_s <= HEARTBEAT_S and summary.estimate_error_s <= HEARTBEAT_S
    return summary


def test_a_kip848_rolling_restart_of_plain_members_is_priced_from_the_broker(kafka, tmp_path):
    summary = _checked(kafka, tmp_path, "rolling-restart", "consumer", agent=False)
    assert summary.pause_error_s is not None  # revocations were priced to a heartbeat
    assert summary.causes_probable[0] == summary.causes_probable[1]  # each leave read as the restart it was


MIGRATIONS = set(builtin_names(migrations=True))
# The plain client has no enforce_rebalance (the agent's is a subscription toggle): that scenario needs the agent.
AGENT_ONLY = {"enforce-rebalance"}
RUNS = [(name, assignor, agent) for name in builtin_names() for agent in (True, False)
        for assignor in (("range",) if name in MIGRATIONS else ("range", "cooperative-sticky", "consumer"))
        if agent or name not in AGENT_ONLY]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "assignor", "agent"), RUNS, ids=[f"{n}-{a}-{'agent' if g else 'plain'}"
                                                                   for n, a, g in RUNS])
def test_every_builtin_scenario_within_the_broker_bounds(kafka, tmp_path, name, assignor, agent):
    _checked(kafka, tmp_path, name, assignor, agent)
