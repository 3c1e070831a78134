"""Two clusters, one group name: one scenario run on two brokers with the same group and topic
names, both sending telemetry to one topic on the first; the pipeline keeps two groups, each
equal to its own run's ground truth, through gold, the recommendations and the marts (issue 37).
With the broker source reading both clusters' __consumer_offsets (issue 52): each group's history
from its own cluster joins its agents' (``source`` both), never the other's.
Slow (two scenario runs and a whole pipeline with its SQL build: about 5.5 min on 2 shared cores):

    ./lens test -m slow tests/e2e/test_two_clusters.py
"""
from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import functions as F

from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.runner import RunOptions, run_scenario
from lens_scenarios.spec import load
from pipelines import catalog, lake
from pipelines.config import PipelineConfig, embedded_broker_groups
from pipelines.gold.costs import read_costs
from pipelines.stages import run_pipeline
from tests.support.gold_matching import check, gold_for_run, matched
from tests.support.kafka_cluster import KafkaCluster
from tuning_report.marts import read_fleet

MARTS_BY_GROUP = ("group_daily_costs", "group_cause_costs", "rebalance_episodes", "episode_handoffs", "member_costs",
                  "config_comparison", "commit_on_revoke_daily")
GOLD_BY_GROUP = (catalog.OWNERSHIP, catalog.HANDOFFS, catalog.EPISODES, catalog.MEMBERS, catalog.METRICS,
                 catalog.PROCESSED, catalog.WHAT_IF, catalog.RECOMMENDATIONS)


@pytest.fixture(scope="module")
def second_kafka() -> Iterator[KafkaCluster]:
    """Another cluster: its own embedded broker, so its own cluster id."""
    from lens_runtime.kafka_broker import EmbeddedKafka

    with EmbeddedKafka() as broker:
        yield KafkaCluster(broker.bootstrap_servers, broker=broker)


def _cluster_id(cluster: KafkaCluster) -> str:
    admin = cluster.admin()  # keep a reference: the future fails if the handle is collected
    return admin.describe_cluster(request_timeout=30).result(timeout=30).cluster_id


@pytest.mark.slow
def test_one_group_name_on_two_clusters_is_two_groups_each_equal_to_its_truth(kafka, second_kafka, spark, tmp_path):
    telemetry, token = f"two-clusters-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex[:6]
    runs = {}
    for name, cluster in (("first", kafka), ("second", second_kafka)):
        options = RunOptions(assignor="cooperative-sticky", commit="batch", out_dir=tmp_path / name,
                             bootstrap=cluster.bootstrap_servers, telemetry_topic=telemetry,
                             telemetry_bootstrap=kafka.bootstrap_servers, token=token)
        cluster_id = _cluster_id(cluster)
        runs[cluster_id] = run_scenario(load("rolling-restart"), options)
    group = {run.manifest["group_id"] for run in runs.values()}
    assert len(group) == 1 and len(runs) == 2, "one group name, two cluster ids"
    group_id = group.pop()

    config = PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, topic=telemetry,
                            lake_path=str(tmp_path / "lake"), broker_source="on",
                            broker_clusters=f"{kafka.bootstrap_servers};{second_kafka.bootstrap_servers}",
                            **embedded_broker_groups())
    run_pipeline(spark, config, progress=lambda _m: None)

    # the broker source shows every group of both clusters (the session broker's other tests' too): this one's
    expected = {(cluster_id, group_id) for cluster_id in runs}
    for table in (*GOLD_BY_GROUP, catalog.BROKER_OWNERSHIP, catalog.COVERAGE):
        groups = {tuple(r) for r in lake.read(spark, config.lake_path, table).where(F.col("group_id") == group_id)
                  .select(*catalog.GROUP_KEY).distinct().collect()}
        assert groups == expected, table.path
    clients = {r.agent_id: r.client_id for r in lake.read(spark, config.lake_path, catalog.EVENTS)
               .select("agent_id", "client_id").distinct().collect()}
    fleet = read_fleet(config.lake_path)
    for mart in MARTS_BY_GROUP:
        assert {g for g in fleet[mart].select(*catalog.GROUP_KEY).unique().iter_rows() if g[1] == group_id} \
            == expected, mart
    assert sorted(g for g in fleet.groups() if g[1] == group_id) == sorted(expected)
    assert {fleet.name_of(g) for g in expected} == {f"{group_id} (cluster {c})" for c in runs}  # the report's headings
    handoffs = [r.asDict() for r in lake.read(spark, config.lake_path, catalog.HANDOFFS)
                .where(F.col("group_id") == group_id).collect()]
    costs = read_costs(spark, config.lake_path)
    for cluster_id, run in runs.items():
        truth = GroundTruth.load(run.run_dir)
        assert truth.handoffs, "the scenario moved nothing"
        mine = [h for h in handoffs if h["cluster_id"] == cluster_id]
        agents = {h[side] for h in mine for side in ("prev_agent_id", "next_agent_id")} - {None}
        others = {h[side] for h in handoffs if h["cluster_id"] != cluster_id
                  for side in ("prev_agent_id", "next_agent_id")} - {None}
        assert not agents & others, "a member in both groups"
        gold = gold_for_run({"handoffs": mine, "clients": clients}, run.manifest["run_id"])
        problems = []
        for handoff, row in matched(truth.handoffs, gold):
            problems.extend([f"gold lacks {handoff}"] if row is None else check(handoff, row))
        assert not problems, f"cluster {cluster_id}:\n" + "\n".join(problems)
        assert {h["source"] for h in mine} == {"both"}, "its own cluster's log saw each of its handoffs"
        total = costs[(cluster_id, group_id)]
        assert total.duplicates <= truth.summary().duplicates <= total.duplicates_upper
