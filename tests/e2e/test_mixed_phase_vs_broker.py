"""The mixed-phase model against the Kafka 4.2.0 broker: the KIP-848 migration built-ins run on the
session broker (under eager range), and every membership change of their rollout and rollback
replayed through ``pipelines.simulator.mixed_phase`` from the group as telemetry showed it just
before: the epoch the change started, who held what once it settled, and every revoke callback of
every member that stayed.

Slow (the runs and their pipeline run are shared with the gold-against-truth check):
`./lens test -m slow tests/e2e/test_mixed_phase_vs_broker.py -s` prints the match rate per run.

Threshold: every mismatch must have a known reason (``mixed_phase_check.reason``: the model
matches with members in another Java hash-bucket order, or two changes came within two heartbeats:
a bump merged, or the two judged together match), and at least 5 changes in 6 must match: the model
is deterministic given the group before a change, so what is left are those, and more than one
change in six explained away would hide a wrong rule.
"""
from __future__ import annotations

import json

import pytest

from lens_scenarios.spec import builtin_names
from pipelines.simulator.mixed_phase import Leave
from pipelines.simulator.observed import mixed_steps, partition_counts
from tests.support.mixed_phase_check import judge, reason, summary

pytestmark = pytest.mark.slow

MIN_MATCHED = 5 / 6
RECORDED_FIELDS = ("kind", "event_time_ms", "agent_id", "seq", "member_id", "group_instance_id", "generation",
                   "group_protocol", "rebalance_protocol", "assignor", "body")


@pytest.mark.parametrize("scenario", builtin_names(fully_instrumented=True, migrations=True))
def test_the_mixed_phase_model_matches_the_broker_change_by_change(landed_migrations, scenario, tmp_path):
    run = landed_migrations["runs"][scenario]
    events = landed_migrations["events"][run.manifest["group_id"]]
    kept = tmp_path / f"{scenario}.jsonl"  # the run's telemetry as tests/simulator/recorded keeps it: a failure's
    kept.write_text("".join(json.dumps({k: e[k] for k in RECORDED_FIELDS}, default=str) + "\n" for e in events))
    steps = mixed_steps(events)
    # every member restarted once on the consumer protocol, two of them back: 12 changes
    assert len(steps) == 12, [s.change for s in steps]
    verdicts = [judge(s, partition_counts(events)) for s in steps]
    print(f"\n{scenario}: {summary(verdicts)}")
    unexplained = []
    for i, v in enumerate(verdicts):
        if v.matched:
            continue
        why = reason(steps, i, v, partition_counts(events))
        print(f"  mismatch at change {i} ({v.rule}): {'; '.join(v.problems)} -- {why or 'UNEXPLAINED'}")
        unexplained += [] if why else [f"change {i} ({v.step.change}): {v.problems}"]
    assert not unexplained, "\n".join([*unexplained, f"the run's telemetry: {kept}"])
    assert sum(v.matched for v in verdicts) >= MIN_MATCHED * len(verdicts), summary(verdicts)
    if scenario.endswith("-static"):  # R3: no epoch moved, no callback on anyone else
        assert all(v.step.bumped_to is None and not v.step.revokes for v in verdicts)
    else:  # R2 then R4 and R6: every change bumped once (but a leave whose round the migrant's join
        # finished, P2), eager classic members revoked all they held
        assert all(v.step.bumped_to == v.step.group.epoch + 1 for v in verdicts
                   if not (isinstance(v.step.change, Leave) and not v.step.change.settles))
        assert any(v.rule == "R4" and v.step.revokes for v in verdicts)
