"""The KIP-848 group settings the cluster applies, read from it (``pipelines.cluster``): the brokers'
group.consumer.* for every group on it, a group's own config where it has one, and why a group on
another cluster, or a cluster that does not answer, gets the pipeline's assumed ones."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from lens_runtime.kafka_broker import FAST_TEST_SETTINGS
from pipelines import cluster
from pipelines.config import PipelineConfig


def _config(bootstrap: str) -> PipelineConfig:
    return PipelineConfig(bootstrap_servers=bootstrap, lake_path="/tmp/unused-lake")


def test_the_brokers_settings_and_a_groups_own_are_read_for_the_groups_on_the_cluster(kafka):
    admin = kafka.admin()
    cluster_id = admin.describe_cluster(request_timeout=10).result().cluster_id
    plain, own = f"plain-{uuid.uuid4().hex[:6]}", f"own-{uuid.uuid4().hex[:6]}"
    override = ConfigResource(ResourceType.GROUP, own, incremental_configs=[ConfigEntry(
        "consumer.heartbeat.interval.ms", "2000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([override])[override].result()

    learned = cluster.learn(_config(kafka.bootstrap_servers), [(cluster_id, plain), (cluster_id, own),
                                                                (cluster_id, ""), ("another-cluster", plain)])
    assert set(learned.groups) == {(cluster_id, plain), (cluster_id, own), (cluster_id, "")}
    assert learned.groups[(cluster_id, "")] == learned.groups[(cluster_id, plain)]  # no GROUP resource: the brokers'
    brokers = learned.groups[(cluster_id, plain)]
    if kafka.broker is not None:  # the embedded broker's settings (another cluster's are its own)
        assert (brokers.heartbeat_ms, brokers.session_timeout_ms) == (
            int(FAST_TEST_SETTINGS["group.consumer.heartbeat.interval.ms"]),
            int(FAST_TEST_SETTINGS["group.consumer.session.timeout.ms"]))
    assert brokers.read_from == f"cluster {cluster_id}: the brokers' group.consumer.* settings"
    mine = learned.groups[(cluster_id, own)]
    assert (mine.heartbeat_ms, mine.session_timeout_ms) == (2000, brokers.session_timeout_ms)
    assert mine.read_from.endswith("and the group's own config")
    assert learned.unread == (f"the group's cluster is not the one the pipeline reads telemetry from ({cluster_id}), "
                              "where they are read")


@pytest.mark.parametrize("bootstrap, why", [("", "no cluster to read them from (no bootstrap servers)"),
                                            ("127.0.0.1:1", "the cluster at 127.0.0.1:1 did not say them (")])
def test_no_cluster_to_ask_leaves_every_group_assumed_and_says_why(bootstrap, why):
    learned = cluster.learn(_config(bootstrap), [("c1", "g")])
    assert learned.groups == {} and learned.unread.startswith(why)
