"""The recommend stage over a lake on the session broker, its settings as `pipeline run` has them
without flags:

- a stage that survives one group: a group whose pass raises is written to
  audit/recommend_failures with its error and named in one line of the stage's output, while every
  other group's what-if and recommendations are written (the pure pass: tests/recommend/test_group_failure.py);
- a KIP-848 group on the cluster the pipeline reads is priced with the settings the cluster applies
  (the embedded broker's 1 s / 10 s), not the defaults (5 s / 45 s).
"""
from __future__ import annotations

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.stages import run_pipeline, run_stage
from tests.support.fleets import eager_rolling_restarts, phased_consumer_protocol, scale_out_then_crash, with_own_ids
from tests.support.lakes import fresh_config


@pytest.fixture(scope="module")
def recommended(spark, kafka, tmp_path_factory):
    """Three groups landed through gold, one planted to fail (a member row without its join, which no
    gold row holds), the KIP-848 one on this cluster; then the recommend stage, its lines kept."""
    config = fresh_config(kafka, tmp_path_factory.mktemp("recommend-stage"))
    assert (config.kip848_heartbeat_ms, config.kip848_session_timeout_ms) == (5_000, 45_000)  # no flags
    admin = kafka.admin()  # held until the answer is in: a collected client fails its futures
    cluster_id = admin.describe_cluster(request_timeout=10).result().cluster_id
    kip848 = with_own_ids(phased_consumer_protocol(), 3)
    for event in kip848.events:
        event["cluster_id"] = cluster_id
    fleets = [with_own_ids(scale_out_then_crash(group="broken"), 1), with_own_ids(eager_rolling_restarts(), 2), kip848]
    kafka.feed(config.topic, [record for fleet in fleets for record in fleet.keyed()])
    run_pipeline(spark, config, ["ingest", "validate", "silver", "gold"], progress=lambda _m: None)
    members = lake.read(spark, config.lake_path, catalog.MEMBERS)
    lake.rewrite(spark, config.lake_path, catalog.MEMBERS, members.withColumn(
        "joined_ms", F.when(F.col("group_id") == "broken", F.lit(None)).otherwise(F.col("joined_ms"))))
    said: list[str] = []
    result = run_stage(spark, config, "recommend", progress=said.append)
    return config, fleets, result, said


def test_a_planted_failing_group_is_named_and_the_others_are_written(spark, recommended):
    config, fleets, result, said = recommended
    assert result["failures"] == 1 and result["groups"] == 3
    [line] = [s for s in said if "failed" in s]
    assert line.startswith("recommend: group 'broken' (cluster synthetic-cluster) failed: TypeError: ")
    assert line.endswith("the other 2 group(s) are written, this one's error is in audit/recommend_failures")
    [failure] = [r.asDict() for r in lake.read(spark, config.lake_path, catalog.RECOMMEND_FAILURES).collect()]
    assert failure["group_id"] == "broken" and failure["error"].startswith("TypeError: ")
    assert failure["raised_at"].startswith("pipelines/") and failure["traceback"].rstrip().endswith("and 'int'")
    healthy = {fleets[1].group, fleets[2].group}
    assert {r.group_id for r in lake.read(spark, config.lake_path, catalog.RECOMMENDATIONS).collect()} == healthy
    assert {r.group_id for r in lake.read(spark, config.lake_path, catalog.WHAT_IF).collect()} == healthy


def test_a_kip848_group_is_priced_with_the_settings_its_cluster_applies(spark, kafka, recommended):
    config, fleets, _, said = recommended
    admin = kafka.admin()
    broker = ConfigResource(ResourceType.BROKER, str(min(n.id for n in admin.describe_cluster().result().nodes)))
    session_ms = int(admin.describe_configs([broker])[broker].result()["group.consumer.session.timeout.ms"].value)
    rows = lake.read(spark, config.lake_path, catalog.WHAT_IF).where(F.col("group_id") == fleets[2].group).collect()
    assert {r.session_timeout_ms for r in rows if r.group_protocol == "consumer"} == {session_ms}
    assert any(line.startswith("recommend: KIP-848 group settings read from the cluster for 1 of 3 group(s)")
               for line in said)
    classic = lake.read(spark, config.lake_path, catalog.WHAT_IF).where(F.col("group_id") == fleets[1].group)
    assert {r.session_timeout_ms for r in classic.collect() if r.group_protocol == "consumer"} == {45_000}



def test_a_large_groups_replays_priced_in_shares_over_tasks_give_the_same_rows(spark, recommended, monkeypatch):
    """Every group made "large" (``SHARED_FROM`` 1): its candidates replayed in shares, one task each,
    and joined by its pass; the what-if and the recommendations equal the one-task pass's, and the
    planted failing group still fails once, in its own pass."""
    from pipelines.recommend import stage as recommend_stage

    config = recommended[0]
    tables = (catalog.WHAT_IF, catalog.RECOMMENDATIONS, catalog.RECOMMEND_FAILURES)
    before = {t.path: sorted(map(tuple, lake.read(spark, config.lake_path, t).drop("traceback").collect()))
              for t in tables}
    monkeypatch.setattr(recommend_stage, "SHARED_FROM", 1)
    lake.set_stage_mark(spark, config.lake_path, "recommend", -1)
    said: list[str] = []
    result = run_stage(spark, config, "recommend", progress=said.append)
    assert result["groups"] == 3 and result["failures"] == 1
    assert any(line.startswith("recommend: 3 large group(s), each priced in ") for line in said), said
    after = {t.path: sorted(map(tuple, lake.read(spark, config.lake_path, t).drop("traceback").collect()))
             for t in tables}
    assert after == before
