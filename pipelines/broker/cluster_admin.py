"""A cluster's Admin API, as the broker stage asks it: the edge that talks to Kafka besides Spark's source.

Through the Kafka client in Spark's own JVM (the Kafka source's jar), so one set of client
settings (Java names: security.protocol, sasl.jaas.config, ...) serves the source and these
calls, and no secret is written anywhere else. What the stage asks: the cluster's id (the
``cluster_id`` of every group, as the agents' DescribeCluster gives it), the partitions of
``__consumer_offsets`` and their offsets (``read_committed``: the last stable offset, so a read
never waits on an open transaction), the topics' ids, and the log end of data partitions at
given times (``offsets_for_times(t + 1)``: the first offset stamped after t, the records produced by t).

A refusal names the ACLs: no READ on ``__consumer_offsets`` (or no DESCRIBE on the reader's group)
is the broker source's one line (``broker_log.offsets_topic.refused``, with the Admin API
fallback); no DESCRIBE on a data topic only leaves its log ends out (``LogEnds.refused``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from lens_runtime.errors import LensError
from pipelines.broker_log.offsets_topic import OFFSETS_TOPIC, refused

TIMEOUT_S = 30
AUTHORIZATION = ("AUTHORIZATION_FAILED", "SASL_AUTHENTICATION_FAILED")


def kafka_error(exc: BaseException) -> str | None:
    """The Kafka error a Java failure (a Py4J error or an exception of Spark's job) comes from, by
    its Kafka name (TOPIC_AUTHORIZATION_FAILED, ...); None when it is not Kafka's."""
    java = getattr(exc, "java_exception", None)
    while java is not None:
        name = java.getClass().getName()
        if name.startswith("org.apache.kafka.common.errors."):
            return _name_of(name)
        java = java.getCause()
    text = str(exc)
    for marker, name in (("TopicAuthorizationException", "TOPIC_AUTHORIZATION_FAILED"),
                         ("GroupAuthorizationException", "GROUP_AUTHORIZATION_FAILED"),
                         ("SaslAuthenticationException", "SASL_AUTHENTICATION_FAILED")):
        if marker in text:
            return name
    return None


def _name_of(java_class: str) -> str:
    """org.apache.kafka.common.errors.TopicAuthorizationException -> TOPIC_AUTHORIZATION_FAILED (Kafka's
    ``Errors`` names, for the errors the stage tells apart)."""
    simple = java_class.rsplit(".", 1)[-1].removesuffix("Exception")
    known = {"TopicAuthorization": "TOPIC_AUTHORIZATION_FAILED", "ClusterAuthorization": "CLUSTER_AUTHORIZATION_FAILED",
             "GroupAuthorization": "GROUP_AUTHORIZATION_FAILED", "SaslAuthentication": "SASL_AUTHENTICATION_FAILED",
             "UnknownTopicOrPartition": "UNKNOWN_TOPIC_OR_PARTITION", "Timeout": "REQUEST_TIMED_OUT"}
    return known.get(simple, simple)


@dataclass
class LogEnds:
    """Log end offsets at times: (topic, partition, at_ms) -> (offset: the records produced by at_ms,
    found: a record stamped after at_ms exists; else the offset is the partition's end when asked),
    and what was refused."""

    offsets: dict[tuple[str, int, int], tuple[int, bool]] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)  # topics without DESCRIBE
    missing: set[str] = field(default_factory=set)  # topics gone


class ClusterAdmin:
    """One cluster's Admin client in Spark's JVM; a context manager that closes it."""

    def __init__(self, spark: SparkSession, options: dict[str, str]) -> None:
        self.jvm = spark.sparkContext._jvm
        self.where = options.get("bootstrap.servers", "?")
        props = self.jvm.java.util.Properties()
        for key, value in options.items():
            props.setProperty(key, str(value))
        props.setProperty("request.timeout.ms", str(TIMEOUT_S * 1000))
        props.setProperty("default.api.timeout.ms", str(TIMEOUT_S * 1000))
        self.admin = self.jvm.org.apache.kafka.clients.admin.Admin.create(props)

    def __enter__(self) -> ClusterAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.admin.close(self.jvm.java.time.Duration.ofSeconds(5))

    def _get(self, future: Any, what: str) -> Any:
        try:
            return future.get(TIMEOUT_S, self.jvm.java.util.concurrent.TimeUnit.SECONDS)
        except Exception as err:  # a Py4J error carrying Kafka's
            name = kafka_error(err)
            if name is not None and name.endswith(AUTHORIZATION) and what.endswith(OFFSETS_TOPIC):
                raise LensError(refused(name)) from None
            raise LensError(f"the broker source at {self.where}: {what} failed ({name or type(err).__name__}): "
                            f"{_first_line(err)}") from None

    def cluster_id(self) -> str:
        """The cluster's id, as the agents' DescribeCluster reads it."""
        return str(self._get(self.admin.describeCluster().clusterId(), "describing the cluster"))

    def partitions(self, topic: str) -> list[int]:
        """The topic's partitions; none when it does not exist (a cluster where no group committed yet)."""
        names = self.jvm.java.util.Collections.singletonList(topic)
        try:
            described = self._get(self.admin.describeTopics(names).allTopicNames(), f"describing {topic}")
        except LensError as err:
            if "(UNKNOWN_TOPIC_OR_PARTITION)" in str(err):
                return []
            raise
        return sorted(int(p.partition()) for p in described.get(topic).partitions())

    def offsets(self, topic: str, partitions: list[int], spec: str | int) -> dict[int, int]:
        """Each partition's ``spec`` offset: earliest, latest (the last stable offset), or at a time
        (epoch ms: the first offset stamped at or after it, else the latest)."""
        specs = self.jvm.org.apache.kafka.clients.admin.OffsetSpec
        of = {"earliest": specs.earliest, "latest": specs.latest}.get(spec) if isinstance(spec, str) else None
        wanted = self.jvm.java.util.HashMap()
        for p in partitions:
            wanted.put(self.jvm.org.apache.kafka.common.TopicPartition(topic, p),
                       of() if of else specs.forTimestamp(spec))
        committed = self.jvm.org.apache.kafka.common.IsolationLevel.READ_COMMITTED
        result = self.admin.listOffsets(wanted, self.jvm.org.apache.kafka.clients.admin.ListOffsetsOptions(committed))
        found = self._get(result.all(), f"listing offsets ({spec}) of {topic}")
        out = {int(e.getKey().partition()): int(e.getValue().offset()) for e in found.entrySet()}
        if any(o < 0 for o in out.values()):
            latest = self.offsets(topic, [p for p, o in out.items() if o < 0], "latest")
            out.update(latest)
        return out

    def topic_ids(self) -> dict[str, str]:
        """topic id -> name, of every topic the cluster has now (Kafka's Uuid string form, as the records')."""
        options = self.jvm.org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(True)
        names = self._get(self.admin.listTopics(options).names(), "listing topics")
        if names.isEmpty():
            return {}
        described = self._get(self.admin.describeTopics(names).allTopicNames(), "describing topics")
        return {str(d.topicId().toString()): str(name) for name, d in described.items()}

    def log_ends_at(self, wanted: set[tuple[str, int, int]]) -> LogEnds:
        """The records each (topic, partition) had by each time (``offsets_for_times(at_ms + 1)``, as
        ``catalog.BROKER_LOG_ENDS`` keeps them): one ListOffsets request per time."""
        by_time: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for topic, partition, at_ms in wanted:
            by_time[at_ms].append((topic, partition))
        out, later = LogEnds(), set()
        specs, tp_class = self.jvm.org.apache.kafka.clients.admin.OffsetSpec, self.jvm.org.apache.kafka.common
        for at_ms, places in sorted(by_time.items()):
            asked = self.jvm.java.util.HashMap()
            for topic, partition in places:
                if topic not in out.refused | out.missing:
                    # the records produced by at_ms: the first offset stamped after it
                    asked.put(tp_class.TopicPartition(topic, partition), specs.forTimestamp(at_ms + 1))
            if asked.isEmpty():
                continue
            result = self.admin.listOffsets(asked)
            for tp in asked.keySet():
                offset = self._log_end(out, result.partitionResult(tp), str(tp.topic()), int(tp.partition()), at_ms)
                if offset is not None and offset >= 0:
                    out.offsets[(str(tp.topic()), int(tp.partition()), at_ms)] = (offset, True)
                elif offset is not None:  # no record stamped that late: its end when asked (after at_ms)
                    later.add((str(tp.topic()), int(tp.partition()), at_ms))
        for topic in {t for t, _, _ in later}:
            ends = self.offsets(topic, sorted({p for t, p, _ in later if t == topic}), "latest")
            out.offsets.update({(t, p, at): (ends[p], False) for t, p, at in later if t == topic})
        return out

    def _log_end(self, out: LogEnds, future: Any, topic: str, partition: int, at_ms: int) -> int | None:
        """One partition's answer; None (its topic noted) when refused or gone."""
        try:
            return int(future.get(TIMEOUT_S, self.jvm.java.util.concurrent.TimeUnit.SECONDS).offset())
        except Exception as err:  # one partition's refusal or absence leaves out that topic, not the run
            name = kafka_error(err) or ""
            if not name.endswith(AUTHORIZATION) and name != "UNKNOWN_TOPIC_OR_PARTITION":
                raise LensError(f"the broker source at {self.where}: the log end of {topic}[{partition}] at {at_ms} "
                                f"failed ({name or type(err).__name__}): {_first_line(err)}") from None
            (out.refused if name.endswith(AUTHORIZATION) else out.missing).add(topic)
            return None


def _first_line(err: BaseException) -> str:
    text = str(getattr(err, "java_exception", None) or err)
    return text.strip().splitlines()[0][:300] if text.strip() else type(err).__name__
