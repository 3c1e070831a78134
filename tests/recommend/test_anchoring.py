"""A prediction is what a change leaves of the measured figure: the replays' ratio applied to it, so
no saving exceeds what was measured, whatever the replay of the current configuration reads; that
replay stands beside the measured figure as the model's fit."""
from __future__ import annotations

import dataclasses

import pytest

from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.group_pass import recommendation_row
from pipelines.recommend.judgement import Evidence
from pipelines.recommend.rules import recommend
from pipelines.recommend.what_if import Measured, anchored, fit_error_pct, what_if
from tests.support.fleets import eager_rolling_restarts
from tests.support.reference_ownership import gold_of_group


def test_the_demos_kip848_run_saves_what_was_measured_not_what_was_replayed():
    """Measured 314 duplicates, replayed 378: commit-on-revoke, replayed to 0, leaves 0 of the 314."""
    assert 314 - anchored(314, 378, 0) == 314
    assert anchored(314, 378, 189) == pytest.approx(157)  # half the replay: half the measured
    assert anchored(314, 378, 450) > 314  # a change that costs more costs more of the measured too
    assert anchored(10, 0, 5) == 15  # no replayed cost to scale: the measured figure plus what the replay adds
    assert fit_error_pct(378, 314) == pytest.approx(20.4, abs=0.1) and fit_error_pct(5, 0) is None


def test_a_replay_off_the_measured_figures_scales_every_prediction_and_says_its_fit():
    """eager_rolling_restarts with gold's figures planted at 80% of what its replay reads: every
    configuration's prediction is 80% of its replay, the current one's the measured figures, and no
    recommendation saves more than was measured; each row carries the replay and its error (+25%)."""
    intervals, handoffs, episodes, members = gold_of_group(eager_rolling_restarts().events, gap_s=10.0)
    w = what_if(members, handoffs, intervals, BrokerGroups())
    replay = w.replayed_baseline
    w = dataclasses.replace(w, measured=Measured(w.measured.handoffs, 0.8 * replay.duplicates, 0.8 * replay.pause_s))
    w = dataclasses.replace(w, priced={c: w.anchor(p) for c, p in w.replayed.items()})
    assert (w.baseline.duplicates, w.baseline.pause_s) == pytest.approx((w.measured.duplicates, w.measured.pause_s))
    for c, p in w.priced.items():
        assert (p.duplicates, p.pause_s) == pytest.approx((0.8 * w.replayed[c].duplicates, 0.8 * w.replayed[c].pause_s))
    rows = [recommendation_row(("", "g"), rank, r, w, "/lake", "agent") for rank, r in
            enumerate(recommend(Evidence("g", members, handoffs, episodes, intervals, w, 1.0)), 1)]
    priced = [r for r in rows if r["predicted_duplicates_saved"] is not None]
    assert priced
    for r in priced:
        assert r["predicted_duplicates_saved"] <= r["predicted_duplicates_before"] <= w.measured.duplicates + 1e-9
        assert r["predicted_pause_saved_s"] <= w.measured.pause_s + 1e-9
    for r in rows:
        assert r["replayed_duplicates"] == pytest.approx(replay.duplicates)
        assert r["replayed_duplicates_error_pct"] == pytest.approx(25.0)
        assert r["replayed_pause_error_pct"] == pytest.approx(25.0)
