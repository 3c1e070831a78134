"""A stage that survives one group: a group whose recommend pass raises is written to
audit/recommend_failures with its error and named in one line of the stage's output, while every
other group's what-if and recommendations are written (the pure pass: tests/recommend/test_group_failure.py)."""
from __future__ import annotations

from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.stages import run_pipeline, run_stage
from tests.support.fleets import eager_rolling_restarts, scale_out_then_crash, with_own_ids
from tests.support.lakes import fresh_config


def test_a_planted_failing_group_is_named_and_the_others_are_written(spark, kafka, tmp_path):
    config = fresh_config(kafka, tmp_path)
    fleets = [with_own_ids(scale_out_then_crash(group="broken"), 1), with_own_ids(eager_rolling_restarts(), 2)]
    kafka.feed(config.topic, [record for fleet in fleets for record in fleet.keyed()])
    run_pipeline(spark, config, ["ingest", "validate", "silver", "gold"], progress=lambda _m: None)
    members = lake.read(spark, config.lake_path, catalog.MEMBERS)  # plant: a member row without its join
    planted = members.withColumn("joined_ms", F.when(F.col("group_id") == "broken", F.lit(None))
                                 .otherwise(F.col("joined_ms")))
    lake.rewrite(spark, config.lake_path, catalog.MEMBERS, planted)

    said: list[str] = []
    result = run_stage(spark, config, "recommend", progress=said.append)

    assert result["failures"] == 1 and result["groups"] == 2
    [line] = [s for s in said if "failed" in s]
    assert line.startswith("recommend: group 'broken' failed: TypeError: ") and "\n" not in line
    assert "the other 1 group(s) are written, this one's error is in audit/recommend_failures" in line
    [failure] = [r.asDict() for r in lake.read(spark, config.lake_path, catalog.RECOMMEND_FAILURES).collect()]
    assert failure["group_id"] == "broken" and failure["error"].startswith("TypeError: ")
    assert failure["raised_at"].startswith("pipelines/") and "Traceback" not in failure["error"]
    written = {r.group_id for r in lake.read(spark, config.lake_path, catalog.RECOMMENDATIONS).collect()}
    assert written == {fleets[1].group}
    assert {r.group_id for r in lake.read(spark, config.lake_path, catalog.WHAT_IF).collect()} == {fleets[1].group}
