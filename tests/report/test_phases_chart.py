"""The protocol phases chart: a migration's phases in time order, each bar its pause per handoff."""
from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from pipelines.vocabulary import GROUP_PHASES
from tuning_report.figures import PHASE_COLOURS, protocol_phases

pytestmark = pytest.mark.fast


def test_each_phase_is_a_bar_in_time_order_and_a_phase_without_handoffs_says_so():
    phases = pl.DataFrame({"phase": ["mixed", "classic", "consumer"],
                           "started_at": [datetime(2026, 1, 1, 0, 1), datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 5)],
                           "duration_s": [240.0, 60.0, None], "partitions_moved": [12, 4, 0],
                           "pause_per_handoff_s": [1.5, 0.25, None]})
    bar = protocol_phases(phases).data[0]
    assert list(bar.x) == ["classic from 00:00:00 (60 s)", "mixed from 00:01:00 (240 s)",
                           "consumer from 00:05:00 (goes on)"]
    assert list(bar.y) == [0.25, 1.5, 0.0]
    assert list(bar.text) == ["0.25 s, 4 handoffs", "1.50 s, 12 handoffs", "no handoff"]
    assert list(bar.marker.color) == [PHASE_COLOURS[p] for p in ("classic", "mixed", "consumer")]
    assert set(PHASE_COLOURS) == set(GROUP_PHASES)  # one colour per declared phase
