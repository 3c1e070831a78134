"""The closed loop's judgement over several reruns (``pipelines.recommend.closed_loop.judge``): the
measured saving is the mean over the runs, with the standard error of that mean, and the verdict
reads the mean. Pure: the runs' costs are given."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pipelines.recommend.closed_loop import judge

REC = {"predicted_duplicates_saved": 550.0, "predicted_pause_saved_s": 1.4,
       "predicted_duplicates_mixed_phase": 1_000.0, "predicted_pause_mixed_phase_s": 8.0}


@dataclass(frozen=True)
class Runs:
    before: tuple[tuple[float, float], ...]
    after: tuple[tuple[float, float], ...]
    mixed_phase: tuple[tuple[float, float], ...] | None = None
    scenario: str = "scale-out-in"
    run_dir: Path = Path("/nowhere")
    group_id: str = "g-rerun"


def test_one_rerun_on_each_side_is_its_own_figure_without_an_error():
    v = judge(REC, Runs(before=((1_000.0, 5.0),), after=((400.0, 3.0),)))
    dups, pause = v.checks
    assert (dups.measured_saving, dups.standard_error, pause.measured_saving) == (600.0, 0.0, 2.0)
    assert v.reruns == 1 and dups.holds and not pause.holds  # 2.0 against 1.4: 43% off


def test_several_reruns_are_judged_by_their_mean_with_its_standard_error():
    """The draws of one change two sessions ago (scale-out-in, KIP-848 staged: 490 and 640 duplicates
    saved, pause 0.4 and 2.7 s): each alone misses one figure; their mean holds both."""
    v = judge(REC, Runs(before=((1_000.0, 5.0),), after=((510.0, 4.6), (360.0, 2.3)),
                        mixed_phase=((915.0, 6.1), (1_100.0, 8.6))))
    dups, pause, mixed_dups, mixed_pause = v.checks
    assert (dups.measured_saving, pause.measured_saving) == (565.0, pytest.approx(1.55))
    assert dups.standard_error == pytest.approx(75.0)  # stdev 106.1 over sqrt(2)
    assert pause.standard_error == pytest.approx(1.15)
    assert (mixed_dups.measured_saving, mixed_pause.measured_saving) == (1_007.5, pytest.approx(7.35))
    assert v.holds and v.reruns == 2
    assert (v.before.duplicates, v.after.duplicates) == (1_000.0, 435.0)


def test_a_plan_steps_runs_before_it_count_as_many_as_after():
    """A plan step's "before" is its previous step rerun as often: the two means' errors add in quadrature."""
    v = judge(REC, Runs(before=((900.0, 5.0), (1_100.0, 5.0)), after=((400.0, 3.6), (500.0, 3.6))))
    dups = v.checks[0]
    assert dups.measured_saving == 550.0
    assert dups.standard_error == pytest.approx((100.0 ** 2 + 50.0 ** 2) ** 0.5)


def test_a_miss_within_the_reruns_noise_says_how_many_reruns_would_decide_it():
    """static-rolling-restart's step 3 (2026-11-27, jittered reruns): the static step before it cost
    7.5-7.6 partition-s six times, the dynamic step 4.1-8.1; 1.4 +- 0.6 measured against 1.1
    predicted. 25% of 1.1 is 0.28: the reruns cannot tell the prediction from the figure."""
    before = tuple((0.0, p) for p in (7.54, 7.63, 7.55, 7.54, 7.61, 7.61))
    after = tuple((0.0, p) for p in (4.80, 8.08, 4.14, 6.94, 6.07, 6.91))
    pause = judge({**REC, "predicted_pause_saved_s": 1.1}, Runs(before=before, after=after)).checks[1]
    assert not pause.holds and pause.standard_error == pytest.approx(0.61, abs=0.01)
    assert pause.reruns_to_decide(6) == pytest.approx(6 * (2 * pause.standard_error / 0.275) ** 2, abs=1)
    assert 100 < pause.reruns_to_decide(6) < 130
    # a miss outside two standard errors is a miss the reruns decided, and a hold needs no more
    far = judge({**REC, "predicted_pause_saved_s": 4.0}, Runs(before=before, after=after)).checks[1]
    assert not far.holds and far.reruns_to_decide(6) is None
    near = judge({**REC, "predicted_pause_saved_s": 1.5}, Runs(before=before, after=after)).checks[1]
    assert near.holds and near.reruns_to_decide(6) is None
