"""The closed loop's runs: pick the recommendation a scenario run can apply, rerun the scenario
with it, and hand both runs' ground-truth costs to the pipeline's judgement
(``pipelines.recommend.closed_loop``).

Measured costs come from the runs' ground truth (the members' own record logs), never
from telemetry: the sum of every handoff's duplicates and pause after the group formed.
"""
from __future__ import annotations

from typing import Any

from lens_runtime.errors import LensError
from lens_scenarios.config_change import Target, apply
from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.runner import RunOptions, RunResult, run_scenario
from lens_scenarios.spec import Scenario
from pipelines.recommend.closed_loop import VERIFIABLE, Costs, Verified, checks_of


def truth_costs(truth: GroundTruth) -> Costs:
    """Duplicates and paused partition-seconds of every handoff after the group formed."""
    churn = [h for h in truth.handoffs if h.cause != "start"]
    return Costs(float(sum(h.duplicates for h in churn)), sum(h.pause_s for h in churn))


def pick(recommendations: list[dict[str, Any]], scenario: Scenario, options: RunOptions,
         kind: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The best-ranked change a scenario run can apply (of ``kind`` if given), and why the
    better-ranked ones were passed over."""
    skipped = []
    for rec in recommendations:
        if rec["kind"] not in VERIFIABLE or (kind is not None and rec["kind"] != kind):
            continue
        try:
            apply(scenario, options, target_of(rec))
        except LensError as err:
            skipped.append(f"{rec['title']}: {err}")
            continue
        return rec, skipped
    raise LensError(f"no {kind or 'config'} recommendation a scenario run can apply"
                    + (f" ({'; '.join(skipped)})" if skipped else "")
                    + ": see `rebalance-lens recommend --group` for what was recommended")


def target_of(rec: dict[str, Any]) -> Target:
    return Target(rec["target_assignor"], rec["target_static_membership"], rec["target_commit_on_revoke"],
                  rec["target_session_timeout_ms"], rec["target_max_poll_interval_ms"])


def rerun(scenario: Scenario, options: RunOptions, baseline: RunResult, rec: dict[str, Any],
          on_run=run_scenario) -> Verified:
    """Rerun ``scenario`` with ``rec`` applied and check its prediction against both runs' truth."""
    changed, changed_options = apply(scenario, options, target_of(rec))
    after_run = on_run(changed, changed_options)
    before, after = truth_costs(baseline.truth), truth_costs(after_run.truth)
    return Verified(scenario.name, rec, before, after, checks_of(rec, before, after), after_run.run_dir,
                    after_run.manifest["group_id"])
