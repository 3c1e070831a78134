"""The closed loop: run a scenario, recommend, apply the recommendation, rerun, and set the
predicted saving beside the measured one.

Measured costs come from the runs' ground truth (the members' own record logs), never
from telemetry: the sum of every handoff's duplicates and pause after the group formed.
A prediction holds when the measured saving goes the predicted way and lies within
``TOLERANCE`` of the prediction; a figure whose predicted change is below the rules'
floor (``MIN_DUPLICATES``, ``MIN_PAUSE_S``: a change the recommendation does not claim)
holds when the measured change stays within that floor plus the tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lens_runtime.errors import LensError
from lens_scenarios.config_change import Target, apply
from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.runner import RunOptions, RunResult, run_scenario
from lens_scenarios.spec import Scenario
from pipelines import catalog, lake
from pipelines.recommend.rules import MIN_DUPLICATES, MIN_PAUSE_S

TOLERANCE = 0.25


@dataclass(frozen=True)
class Costs:
    duplicates: float
    pause_s: float


@dataclass(frozen=True)
class Check:
    figure: str
    predicted_saving: float
    measured_saving: float
    floor: float

    @property
    def holds(self) -> bool:
        p, m = self.predicted_saving, self.measured_saving
        if abs(p) < self.floor:
            return abs(m) <= self.floor + TOLERANCE * abs(p)
        return (m > 0) == (p > 0) and abs(m - p) <= TOLERANCE * abs(p)


@dataclass(frozen=True)
class Verified:
    scenario: str
    recommendation: dict[str, Any]
    before: Costs  # ground truth of the run the recommendation was made from
    after: Costs  # ground truth of the rerun with the change
    checks: tuple[Check, Check]
    rerun_dir: Path
    rerun_group_id: str

    @property
    def holds(self) -> bool:
        return all(c.holds for c in self.checks)


def truth_costs(truth: GroundTruth) -> Costs:
    """Duplicates and paused partition-seconds of every handoff after the group formed."""
    churn = [h for h in truth.handoffs if h.cause != "start"]
    return Costs(float(sum(h.duplicates for h in churn)), sum(h.pause_s for h in churn))


# The kinds a rerun can check: a config change. (The enforce policy changes the application's
# calls, which a scenario's timeline fixes.)
VERIFIABLE = ("assignor", "static_membership", "commit_on_revoke", "max_poll_interval", "session_timeout")


def recommendations_of(spark: SparkSession, lake_path: str, group_id: str) -> list[dict[str, Any]]:
    """The group's rows of gold/recommendations, best first."""
    rows = (lake.read(spark, lake_path, catalog.RECOMMENDATIONS).where(F.col("group_id") == group_id)
            .orderBy("rank").collect())
    return [r.asDict(recursive=True) for r in rows]


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
    checks = (Check("duplicates", rec["predicted_duplicates_saved"] or 0.0, before.duplicates - after.duplicates,
                    MIN_DUPLICATES),
              Check("paused partition-seconds", rec["predicted_pause_saved_s"] or 0.0, before.pause_s - after.pause_s,
                    MIN_PAUSE_S))
    return Verified(scenario.name, rec, before, after, checks, after_run.run_dir, after_run.manifest["group_id"])


def record(spark: SparkSession, lake_path: str, verified: Verified) -> None:
    """Keep the check in ``gold/verifications`` (the report's "predicted against measured")."""
    from datetime import datetime, timezone

    rec, (dups, pause) = verified.recommendation, verified.checks
    figures = {"predicted_duplicates_saved": dups.predicted_saving, "measured_duplicates_saved": dups.measured_saving,
               "predicted_pause_saved_s": pause.predicted_saving, "measured_pause_saved_s": pause.measured_saving,
               "measured_duplicates_before": verified.before.duplicates,
               "measured_duplicates_after": verified.after.duplicates,
               "measured_pause_before_s": verified.before.pause_s, "measured_pause_after_s": verified.after.pause_s}
    row = {"group_id": rec["group_id"], "verified_at": datetime.now(timezone.utc), "scenario": verified.scenario,
           "kind": rec["kind"], "title": rec["title"], "config_change": list(rec["config_change"]),
           **{name: float(value) for name, value in figures.items()},
           "holds": verified.holds, "rerun_group_id": verified.rerun_group_id}
    rows = spark.createDataFrame([row], schema=catalog.VERIFICATIONS.schema())
    lake.insert_new(spark, lake_path, catalog.VERIFICATIONS, rows)
