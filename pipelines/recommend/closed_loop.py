"""The closed loop's judgement and its record: does a rerun with a recommendation applied save
what the recommendation predicted, and ``gold/verifications``, where each check is kept.

A prediction holds when the measured saving goes the predicted way and lies within
``TOLERANCE`` of the prediction; a figure whose predicted change is below the rules'
floor (``pipelines.policy``'s ``MIN_DUPLICATES``, ``MIN_PAUSE_S``: a change the recommendation does not claim)
holds when the measured change stays within that floor plus the tolerance. With several
reruns (``--reruns``) the measured figure is their mean, given with its standard error: one
run is one draw (where a restart lands in a commit cycle), and two reruns of one change have
differed by a factor of two. A check that does not hold though its prediction lies within the
reruns' noise says how many reruns would decide it (``Check.reruns_to_decide``).

Here, not in the CLI: what a check holds is the pipeline's judgement, and ``gold/verifications``
is a lake table, written under the lake's lock like every stage's (``pipelines.lake_lock``). The
runs themselves (apply the change to a scenario, rerun it, its ground truth's costs) are
``lens_scenarios.rerun``'s; ``rebalance-lens recommend --verify`` parses its arguments, calls
both and prints.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake, lake_lock
from pipelines.policy import MIN_DUPLICATES, MIN_PAUSE_S, TOLERANCE
from pipelines.vocabulary import VERIFIABLE_KINDS


@dataclass(frozen=True)
class Costs:
    duplicates: float
    pause_s: float


@dataclass(frozen=True)
class Check:
    figure: str
    predicted_saving: float
    measured_saving: float  # the mean over the reruns
    floor: float
    standard_error: float = 0.0  # of the measured saving (0: one run on each side)

    @property
    def band(self) -> float:
        """How far the measured figure may lie from what it is held against (0 below the floor,
        else the prediction)."""
        p = abs(self.predicted_saving)
        return self.floor + TOLERANCE * p if p < self.floor else TOLERANCE * p

    @property
    def holds(self) -> bool:
        p, m = self.predicted_saving, self.measured_saving
        if abs(p) < self.floor:
            return abs(m) <= self.band
        return (m > 0) == (p > 0) and abs(m - p) <= self.band

    def reruns_to_decide(self, reruns: int) -> int | None:
        """For a check that does not hold while the prediction lies within two standard errors of the
        measured figure (the reruns do not tell the two apart): about how many reruns would make two
        standard errors as narrow as what holds allows. None where the reruns decided.

        A staged step's saving is the difference of two costs of several partition-seconds each, and
        one run is one draw of heartbeat phases: static-rolling-restart's step 3 measured 4.1 to 8.1
        partition-s over six reruns of one change, a standard error of 0.6 on a 1.1 s saving whose
        25% is 0.28."""
        p, m, se = self.predicted_saving, self.measured_saving, self.standard_error
        if self.holds or se == 0 or abs(m - p) > 2 * se:
            return None
        return math.ceil(reruns * (2 * se / self.band) ** 2)


@dataclass(frozen=True)
class Verified:
    scenario: str
    recommendation: dict[str, Any]
    before: Costs  # ground truth of the run the recommendation was made from
    after: Costs  # ground truth of the rerun with the change
    checks: tuple[Check, ...]  # the two savings; a staged migration's mixed-phase costs after them
    rerun_dir: Path
    rerun_group_id: str
    reruns: int = 1  # runs with the change, averaged

    @property
    def holds(self) -> bool:
        return all(c.holds for c in self.checks)


# The kinds a rerun can check: a config change (declared with the kinds).
VERIFIABLE = VERIFIABLE_KINDS


@dataclass(frozen=True)
class Mean:
    """A measured figure over one or more runs: their mean and its standard error."""

    mean: float
    standard_error: float


def mean_of(values: Sequence[float]) -> Mean:
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0
    return Mean(statistics.fmean(values), se)


def difference(before: Sequence[float], after: Sequence[float]) -> Mean:
    """``before - after`` of two independent sets of runs (the error of each mean adds in quadrature)."""
    b, a = mean_of(before), mean_of(after)
    return Mean(b.mean - a.mean, (b.standard_error ** 2 + a.standard_error ** 2) ** 0.5)


def checks_of(rec: dict[str, Any], before: Sequence[Costs], after: Sequence[Costs],
              mixed_phase: Sequence[Costs] | None = None) -> tuple[Check, ...]:
    """The recommendation's predicted savings against the measured ones (``before - after``, each the
    mean over its runs); for a staged migration also its mixed phase's predicted costs against the
    measured ones."""
    def check(figure: str, predicted: float | None, m: Mean, floor: float) -> Check:
        return Check(figure, predicted or 0.0, m.mean, floor, m.standard_error)

    savings = (check("duplicates", rec["predicted_duplicates_saved"],
                     difference([c.duplicates for c in before], [c.duplicates for c in after]), MIN_DUPLICATES),
               check("paused partition-seconds", rec["predicted_pause_saved_s"],
                     difference([c.pause_s for c in before], [c.pause_s for c in after]), MIN_PAUSE_S))
    if mixed_phase is None:
        return savings
    return (*savings,
            check("mixed-phase duplicates", rec["predicted_duplicates_mixed_phase"],
                  mean_of([c.duplicates for c in mixed_phase]), MIN_DUPLICATES),
            check("mixed-phase paused partition-seconds", rec["predicted_pause_mixed_phase_s"],
                  mean_of([c.pause_s for c in mixed_phase]), MIN_PAUSE_S))


class RerunCosts(Protocol):
    """What the judgement needs of the reruns (``lens_scenarios.rerun.Rerun``): every run's ground-truth
    costs as (duplicates, paused partition-seconds), where the last rerun is and its group."""

    scenario: str
    before: tuple[tuple[float, float], ...]
    after: tuple[tuple[float, float], ...]
    run_dir: Path
    group_id: str
    mixed_phase: tuple[tuple[float, float], ...] | None  # a staged migration's: its mixed phase's costs


def judge(rec: dict[str, Any], rerun: RerunCosts) -> Verified:
    """The check of ``rec`` by ``rerun``: its predicted savings against the runs' truth (``before`` and
    ``after``: the means)."""
    before, after = [Costs(*c) for c in rerun.before], [Costs(*c) for c in rerun.after]
    mixed = [Costs(*c) for c in rerun.mixed_phase] if rerun.mixed_phase is not None else None

    def mean(runs: list[Costs]) -> Costs:
        return Costs(mean_of([c.duplicates for c in runs]).mean, mean_of([c.pause_s for c in runs]).mean)

    return Verified(rerun.scenario, rec, mean(before), mean(after), checks_of(rec, before, after, mixed),
                    rerun.run_dir, rerun.group_id, len(after))


def recommendations_of(spark: SparkSession, lake_path: str, group_id: str) -> list[dict[str, Any]]:
    """The group's rows of gold/recommendations, best first."""
    rows = (lake.read(spark, lake_path, catalog.RECOMMENDATIONS).where(F.col("group_id") == group_id)
            .orderBy("rank").collect())
    return [r.asDict(recursive=True) for r in rows]


def record(spark: SparkSession, lake_path: str, verified: Verified, lock_wait_s: float = 0.0) -> None:
    """Keep the check in ``gold/verifications`` (the report's "predicted against measured"), holding
    the lake's lock (waiting up to ``lock_wait_s`` for another run): one writer per lake."""
    from datetime import datetime, timezone

    rec, (dups, pause, *mixed) = verified.recommendation, verified.checks
    if mixed:
        figures_mixed = {"predicted_duplicates_mixed_phase": mixed[0].predicted_saving,
                         "measured_duplicates_mixed_phase": mixed[0].measured_saving,
                         "predicted_pause_mixed_phase_s": mixed[1].predicted_saving,
                         "measured_pause_mixed_phase_s": mixed[1].measured_saving}
    else:
        figures_mixed = {}
    figures = {"predicted_duplicates_saved": dups.predicted_saving, "measured_duplicates_saved": dups.measured_saving,
               "measured_duplicates_saved_se": dups.standard_error,
               "predicted_pause_saved_s": pause.predicted_saving, "measured_pause_saved_s": pause.measured_saving,
               "measured_pause_saved_se_s": pause.standard_error,
               "measured_duplicates_before": verified.before.duplicates,
               "measured_duplicates_after": verified.after.duplicates,
               "measured_pause_before_s": verified.before.pause_s, "measured_pause_after_s": verified.after.pause_s}
    row = dict.fromkeys(catalog.VERIFICATIONS.column_names())  # a check without a mixed phase leaves its columns null
    row |= {"cluster_id": rec["cluster_id"], "group_id": rec["group_id"], "verified_at": datetime.now(timezone.utc),
            "scenario": verified.scenario,
            "kind": rec["kind"], "title": rec["title"], "config_change": list(rec["config_change"]),
            **{name: float(value) for name, value in {**figures, **figures_mixed}.items()},
            "holds": verified.holds, "rerun_group_id": verified.rerun_group_id, "reruns": verified.reruns}
    rows = spark.createDataFrame([row], schema=catalog.VERIFICATIONS.schema())
    with lake_lock.locked(lake_path, lock_wait_s):
        lake.insert_new(spark, lake_path, catalog.VERIFICATIONS, rows)
