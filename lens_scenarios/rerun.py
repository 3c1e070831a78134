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


Cost = tuple[float, float]  # (duplicates, paused partition-seconds) of one run


@dataclass(frozen=True)
class Rerun:
    """Reruns with a recommendation applied: each run's costs from its ground truth, as
    (duplicates, paused partition-seconds) of every handoff after the group formed, one entry per
    run. A staged migration's reruns also give their mixed phase's (the handoffs the migration
    caused), apart from ``after`` (the scenario's own churn on the new protocol)."""

    scenario: str
    before: tuple[Cost, ...]
    after: tuple[Cost, ...]
    run_dir: Path  # the last rerun's
    group_id: str  # the last rerun's
    mixed_phase: tuple[Cost, ...] | None = None


MIGRATION_CAUSE = "protocol_migration"
# The recommendation kinds of a staged plan's steps (pipelines.vocabulary.PLAN_KINDS; a test checks)
PLAN_KINDS = ("plan_step", "migration")


def truth_costs(truth: GroundTruth, migration: bool | None = None) -> Cost:
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
    steps = [r["title"] for r in recommendations if r["kind"] in PLAN_KINDS]
    planned = (f"; a change that is a step of the staged plan is checked as that step, --step N ({'; '.join(steps)})"
               if kind is not None and steps else "")
    raise LensError(f"no {kind or 'config'} recommendation a scenario run can apply"
                    + (f" ({'; '.join(skipped)})" if skipped else "") + planned
                    + ": see `rebalance-lens recommend --group` for what was recommended")


def previous_step(recommendations: list[dict[str, Any]], step: dict[str, Any]) -> dict[str, Any] | None:
    """The plan step before ``step`` (None: it is the first)."""
    before = [r for r in recommendations if r["kind"] in PLAN_KINDS and r["rank"] < step["rank"]]
    return max(before, key=lambda r: r["rank"], default=None)


def target_of(rec: dict[str, Any]) -> Target:
    return Target(rec["target_assignor"], rec["target_static_membership"], rec["target_commit_on_revoke"],
                  rec["target_session_timeout_ms"], rec["target_max_poll_interval_ms"])


def rerun(scenario: Scenario, options: RunOptions, baseline: RunResult, rec: dict[str, Any],
          source: Target | None = None, on_run=run_scenario, times: int = 1) -> Rerun:
    """Rerun ``scenario`` ``times`` times with ``rec`` applied, from the configuration before it
    (``source``: a plan step's previous step, run as many times; None: the baseline's, whose run
    ``baseline`` is the one the prediction was priced on, so it stays the only "before"); every
    run's costs from its ground truth. Several runs because one run is one draw: where a crash
    lands in a commit cycle, whether two restarts share a join round. A change that moves a classic
    group to the consumer protocol is run the way it is rolled out: ``source``'s run with every
    member first moved over one at a time (``config_change.migrating_first``; a migration changes
    nothing else), its mixed phase apart from its churn after."""
    start = (scenario, options)
    if source is not None:
        start = apply(scenario, options, source)
    befores = [baseline] if source is None else [on_run(*start) for _ in range(times)]
    protocol, remote = target_of(rec).assignor.split(":")
    migrates = protocol == "consumer" and protocol_of(start[1].assignor) != "consumer"
    changed = (migrating_first(start[0], remote), start[1]) if migrates else apply(scenario, options, target_of(rec))
    afters = [on_run(*changed) for _ in range(times)]
    last = afters[-1]
    return Rerun(scenario.name, tuple(truth_costs(r.truth) for r in befores),
                 tuple(truth_costs(r.truth, migration=False if migrates else None) for r in afters),
                 last.run_dir, last.manifest["group_id"],
                 tuple(truth_costs(r.truth, migration=True) for r in afters) if migrates else None)
