"""The closed loop's runs: pick the recommendation a scenario run can apply, rerun the scenario
with it, and give both runs' ground-truth costs for the pipeline's judgement
(``pipelines.recommend.closed_loop.judge``; scenarios never import the pipelines, so the caller
joins the two).

Measured costs come from the runs' ground truth (the members' own record logs), never
from telemetry: the sum of every handoff's duplicates and pause after the group formed.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lens_runtime.errors import LensError
from lens_scenarios.config_change import Target, apply, migrating_first
from lens_scenarios.consumer_config import protocol_of
from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.runner import RunOptions, RunResult, run_scenario
from lens_scenarios.spec import Scenario


@dataclass(frozen=True)
class Rerun:
    """A rerun with a recommendation applied: both runs' costs from their ground truth, as
    (duplicates, paused partition-seconds) of every handoff after the group formed. A staged
    migration's rerun also gives its mixed phase's (the handoffs the migration caused), apart
    from ``after`` (the scenario's own churn on the new protocol)."""

    scenario: str
    before: tuple[float, float]
    after: tuple[float, float]
    run_dir: Path
    group_id: str
    mixed_phase: tuple[float, float] | None = None


MIGRATION_CAUSE = "protocol_migration"
# The recommendation kinds of a staged plan's steps (pipelines.vocabulary.PLAN_KINDS; a test checks)
PLAN_KINDS = ("plan_step", "migration")


def truth_costs(truth: GroundTruth, migration: bool | None = None) -> tuple[float, float]:
    """Duplicates and paused partition-seconds of every handoff after the group formed; of the
    migration's handoffs only (``migration`` True), or of all but them (False)."""
    churn = [h for h in truth.handoffs if h.cause != "start"
             and (migration is None or (h.cause == MIGRATION_CAUSE) == migration)]
    return float(sum(h.duplicates for h in churn)), float(sum(h.pause_s for h in churn))


def pick(recommendations: list[dict[str, Any]], scenario: Scenario, options: RunOptions,
         kinds: Collection[str], kind: str | None = None, step: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """The best-ranked change of ``kinds`` (the ones a rerun can check) a scenario run can apply
    (of ``kind`` if given; ``step``: the plan's step of that number, whatever its kind), and why the
    better-ranked ones were passed over."""
    if step is not None:
        steps = [r for r in recommendations if r["kind"] in PLAN_KINDS]
        if not 1 <= step <= len(steps):
            raise LensError(f"--step {step}: the plan has {len(steps)} step(s); pass --step 1 to {len(steps)}"
                            if steps else f"--step {step}: this run's recommendations have no staged plan; "
                            "drop --step")
        recommendations, kinds, kind = [steps[step - 1]], PLAN_KINDS, None
    skipped = []
    for rec in recommendations:
        if rec["kind"] not in kinds or (kind is not None and rec["kind"] != kind):
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


def previous_step(recommendations: list[dict[str, Any]], step: dict[str, Any]) -> dict[str, Any] | None:
    """The plan step before ``step`` (None: it is the first)."""
    before = [r for r in recommendations if r["kind"] in PLAN_KINDS and r["rank"] < step["rank"]]
    return max(before, key=lambda r: r["rank"], default=None)


def target_of(rec: dict[str, Any]) -> Target:
    return Target(rec["target_assignor"], rec["target_static_membership"], rec["target_commit_on_revoke"],
                  rec["target_session_timeout_ms"], rec["target_max_poll_interval_ms"])


def rerun(scenario: Scenario, options: RunOptions, baseline: RunResult, rec: dict[str, Any],
          source: Target | None = None, on_run=run_scenario) -> Rerun:
    """Rerun ``scenario`` with ``rec`` applied, from the configuration before it (``source``: a plan
    step's previous step; None: the baseline's, whose run is ``baseline``); both runs' costs from
    their ground truth. A change that moves a classic group to the consumer protocol is run the way
    it is rolled out: ``source``'s run with every member first moved over one at a time
    (``config_change.migrating_first``; a migration changes nothing else), its mixed phase apart
    from its churn after."""
    before_run, start = baseline, (scenario, options)
    if source is not None:
        start = apply(scenario, options, source)
        before_run = on_run(*start)
    protocol, remote = target_of(rec).assignor.split(":")
    if protocol != "consumer" or protocol_of(start[1].assignor) == "consumer":
        after_run = on_run(*apply(scenario, options, target_of(rec)))
        return Rerun(scenario.name, truth_costs(before_run.truth), truth_costs(after_run.truth), after_run.run_dir,
                     after_run.manifest["group_id"])
    after_run = on_run(migrating_first(start[0], remote), start[1])
    return Rerun(scenario.name, truth_costs(before_run.truth), truth_costs(after_run.truth, migration=False),
                 after_run.run_dir, after_run.manifest["group_id"], truth_costs(after_run.truth, migration=True))
