"""Gold on every built-in scenario, fed in small incremental runs with late and out-of-order
events, equals gold from one run; and the facts Spark cuts for the fold equal the Python cut."""
from __future__ import annotations

from tests.support.sliced_gold import assert_sliced_gold_equals, assert_spark_facts_equal_python


def test_spark_cuts_the_scenarios_facts_as_python_does(spark, landed):
    assert_spark_facts_equal_python(spark, landed["config"], stalls_expected=False)


def test_the_scenarios_in_four_incremental_runs_give_one_runs_gold(spark, landed, tmp_path):
    assert_sliced_gold_equals(spark, landed["config"], tmp_path, slices=4)
