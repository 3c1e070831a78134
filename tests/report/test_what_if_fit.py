"""The report sets every prediction against what was measured: the what-if chart rings the current
configuration at the measured figures, the model's own replay of the same period beside it (its fit),
and a recommendation says what it leaves of the measured figures and how far the replay was off."""
from __future__ import annotations

import json
import re

from tests.support.fleets import eager_rolling_restarts
from tests.support.recommending import recommend_fleet
from tests.support.report_page import page_of
from tuning_report import figures
import polars as pl


def test_the_current_configuration_sits_on_the_measured_figures_and_its_replay_beside_it_is_the_fit():
    what_if, found = recommend_fleet(eager_rolling_restarts())
    current = next(w for w in what_if if w["is_current"])
    fig = figures.what_if(pl.DataFrame(what_if))
    traces = {t.name: t for t in fig.data}
    ring, fit = traces["current (measured)"], traces["current (replayed: the model's fit)"]
    assert (ring.x[0], ring.y[0]) == (current["measured_pause_s"], current["measured_duplicates"])
    assert (fit.x[0], fit.y[0]) == (current["replayed_pause_s"], current["replayed_duplicates"])
    assert (current["predicted_duplicates"], current["predicted_pause_s"]) == (
        current["measured_duplicates"], current["measured_pause_s"])  # a prediction is a share of the measured

    page = page_of([r for r in found if r["kind"] != "healthy"], what_if)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    first = found[0]
    assert (f"What the change leaves of the measured {first['measured_duplicates']:,.0f} duplicates and "
            f"{first['measured_pause_s']:,.1f} paused partition-s. The model's fit: its replay of the same period "
            f"reads {first['replayed_duplicates']:,.0f}") in text
    assert json.dumps("current (replayed: the model's fit)")[1:-1] in page
