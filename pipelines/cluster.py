"""What the pipeline asks the Kafka cluster it reads telemetry from: its Admin client, and the
KIP-848 group settings the cluster applies to the groups on it.

The consumer protocol's heartbeat interval and session timeout are the cluster's, not the
members' (a KIP-848 member sets neither), so telemetry cannot carry them; the recommend stage
prices a KIP-848 group with them (a move's wait for the gainer's heartbeat, a crash's wait for
the session). They are the brokers' ``group.consumer.heartbeat.interval.ms`` and
``group.consumer.session.timeout.ms``, unless the group has its own ``consumer.heartbeat.interval.ms``
/ ``consumer.session.timeout.ms`` (a group config, Kafka 4.0+: ``kafka-configs --entity-type
groups``); both read with the Admin API's DescribeConfigs, a BROKER resource and one GROUP
resource per group (confluent-kafka >= 2.6 describes GROUP resources).

Why here and not in the agents: the pipeline already holds a connection to this cluster
(ingest's), the settings are the cluster's, one read a run serves every group on it, and the
agents stay what they are in the host, a consumer's wrapper: an Admin client in every member
process would be one more connection per consumer, and DescribeConfigs on the cluster needs an
ACL (DESCRIBE_CONFIGS on CLUSTER) that consumer principals seldom have, so most members would
fail to read it. What this reaches: the groups whose cluster id (the agents send it) is this
cluster's. A group on another cluster is priced with the pipeline's settings
(``--kip848-heartbeat-ms``, ``--kip848-session-timeout-ms``, Kafka's defaults unless set), and
its recommendations say so.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.config import PipelineConfig

# The settings, by what the pricing calls them: the brokers' name and a group config's name.
BROKER_KEYS = {"heartbeat_ms": "group.consumer.heartbeat.interval.ms",
               "session_timeout_ms": "group.consumer.session.timeout.ms"}
GROUP_KEYS = {"heartbeat_ms": "consumer.heartbeat.interval.ms", "session_timeout_ms": "consumer.session.timeout.ms"}
GROUP_CONFIG_SOURCE = 8  # ConfigSource.GROUP_CONFIG: the group's own override (a default reads 5)
TIMEOUT_S = 5.0  # per request: a run waits at most this long for a cluster that does not answer


def admin(config: PipelineConfig) -> Any:
    """An Admin client of the telemetry cluster (confluent-kafka)."""
    from confluent_kafka.admin import AdminClient

    # log_level 4: librdkafka's info lines (a closed client's "purging unserved events") stay off the console
    return AdminClient({"bootstrap.servers": config.bootstrap_servers, "socket.timeout.ms": 10000, "log_level": 4})


@dataclass(frozen=True)
class GroupSettings:
    """The KIP-848 settings the cluster applies to one group, and where they were read."""

    heartbeat_ms: int
    session_timeout_ms: int
    read_from: str  # "cluster <id>: the brokers' group.consumer.*" or "... and the group's own config"


@dataclass(frozen=True)
class Learned:
    """What one run read: per group (cluster_id, group_id) on this cluster its settings; ``unread``:
    why the others' were not read (their recommendations say it, with the settings assumed)."""

    groups: dict[tuple[str, str], GroupSettings]
    unread: str


def _values(entries: dict[str, Any], keys: dict[str, str], overrides_only: bool = False) -> dict[str, int]:
    """The settings ``entries`` (a DescribeConfigs answer) hold, by the pricing's names."""
    return {name: int(entries[key].value) for name, key in keys.items()
            if key in entries and entries[key].value is not None
            and (not overrides_only or entries[key].source == GROUP_CONFIG_SOURCE)}


def _broker_settings(client: Any, broker_id: int) -> dict[str, int]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.BROKER, str(broker_id))
    return _values(client.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(), BROKER_KEYS)


def _group_overrides(client: Any, group_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Each group's own settings where it has any; a group the cluster will not describe (an older
    broker, no DESCRIBE_CONFIGS on it) has none, and gets the brokers'."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    resources = []
    for name in group_ids:
        if not name:  # the empty group id would fail the whole request: the brokers' settings apply to it
            continue
        try:
            resources.append(ConfigResource(ResourceType.GROUP, name))
        except ValueError:  # another name the Admin API refuses to describe: likewise
            continue
    if not resources:
        return {}
    out = {}
    try:
        answers = client.describe_configs(resources, request_timeout=TIMEOUT_S)
    except Exception:  # noqa: BLE001 (librdkafka refused the request): every group gets the brokers'
        return {}
    for resource, future in answers.items():
        try:
            out[resource.name] = _values(future.result(), GROUP_KEYS, overrides_only=True)
        except Exception:  # noqa: BLE001 (librdkafka's KafkaException, or a timeout): the brokers' apply
            out[resource.name] = {}
    return out


def learn(config: PipelineConfig, groups: Sequence[tuple[str, str]]) -> Learned:
    """The settings of ``groups`` (``catalog.GROUP_KEY`` tuples) that are on the telemetry cluster,
    read from it; none when there is no cluster to ask or it does not answer (``unread`` says why)."""
    from confluent_kafka import KafkaException

    if not config.bootstrap_servers:
        return Learned({}, "no cluster to read them from (no bootstrap servers)")
    client = admin(config)
    try:
        cluster = client.describe_cluster(request_timeout=TIMEOUT_S).result()
        brokers = _broker_settings(client, min(node.id for node in cluster.nodes))
        on_cluster = [g for g in groups if g[0] == cluster.cluster_id]
        overrides = _group_overrides(client, sorted({g[1] for g in on_cluster}))
    except (KafkaException, ValueError) as err:
        return Learned({}, f"the cluster at {config.bootstrap_servers} did not say them ({err})")
    if len(brokers) < len(BROKER_KEYS):
        return Learned({}, f"the brokers of cluster {cluster.cluster_id} did not report them")
    source = f"cluster {cluster.cluster_id}: the brokers' group.consumer.* settings"
    learned = {}
    for g in on_cluster:
        own = overrides.get(g[1], {})
        settings = {**brokers, **own}
        learned[g] = GroupSettings(settings["heartbeat_ms"], settings["session_timeout_ms"],
                                   f"{source} and the group's own config" if own else source)
    return Learned(learned, f"the group's cluster is not the one the pipeline reads telemetry from "
                            f"({cluster.cluster_id}), where they are read")
