"""Gold on every built-in scenario, fed in small incremental runs with late and out-of-order
events, equals gold from one run; and gold's ownership intervals (the fold over the runs of
facts Spark cuts and sums) equal the per-event reference's."""
from __future__ import annotations

import pytest

from tests.support.sliced_gold import assert_gold_intervals_equal_reference, assert_sliced_gold_equals


def test_gold_intervals_equal_the_per_event_reference(spark, landed):
    assert_gold_intervals_equal_reference(spark, landed["config"])


# four runs of validate, silver and gold (~2-3 min): ./lens test -m slow tests/e2e/test_gold_slices.py
@pytest.mark.slow
def test_the_scenarios_in_four_incremental_runs_give_one_runs_gold(spark, landed, tmp_path):
    assert_sliced_gold_equals(spark, landed["config"], tmp_path, slices=4)
