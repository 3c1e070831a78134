"""The cost model's parameters, fitted from a group's own gold rows."""
from __future__ import annotations

import pytest

from pipelines.simulator.cost_model import MIN_WINDOW_SAMPLES, uncommitted_window

pytestmark = pytest.mark.fast


def test_the_uncommitted_window_is_read_from_the_progress_ticks_once_there_are_enough():
    """Two revokes re-delivered 10 records each on a 50 records/s partition (0.2 s); the member's 40
    progress ticks saw 25 uncommitted records on average (0.5 s): the ticks win; with too few, the revokes."""
    rate = {("t", 0): 50.0}
    revoked = [{"topic": "t", "partition": 0, "duplicates": 10}] * 2
    ticks = [{"topic": "t", "partition": 0, "uncommitted_sum": 1_000, "uncommitted_samples": 40}]
    assert uncommitted_window(revoked, ticks, rate) == (0.5, 40)
    few = [{**ticks[0], "uncommitted_sum": 25 * (MIN_WINDOW_SAMPLES - 1), "uncommitted_samples": MIN_WINDOW_SAMPLES - 1}]
    assert uncommitted_window(revoked, few, rate) == (0.2, 2)
    assert uncommitted_window([], [], rate) == (0.0, 0)
