"""The broker stage against what a real cluster does to it: a reader without the ACL, a compacted
topic read for the first time, a group deleted and recreated under its name, a coordinator that
reloads its groups (a broker restart: what a coordinator moving to another broker does to the
log), and two clusters whose groups share a name. A broker of its own: an authorizer
(StandardAuthorizer; the PLAINTEXT listener is a super user, the SASL user ``reader`` has only the
ACLs a test grants) and a cleaner that compacts ``__consumer_offsets`` within seconds.

Slow (a broker of its own, groups driven on it, several stage runs):
``./lens test -m slow tests/broker_log/test_broker_faults.py`` (a few minutes).
"""
from __future__ import annotations

import secrets
import time
import uuid

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
from pyspark.sql import functions as F

from lens_runtime.errors import LensError
from lens_runtime.kafka_broker import EmbeddedKafka
from pipelines import catalog, lake
from pipelines.broker_log.offsets_topic import OFFSETS_TOPIC, READER_GROUP, read_offsets_topic
from pipelines.config import PipelineConfig
from pipelines.stages import run_stage
from tests.support.kafka_cluster import KafkaCluster

pytestmark = pytest.mark.slow
READER = "reader"
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS", "allow.everyone.if.no.acl.found": "false"}
COMPACTING = {"log.roll.ms": "1000", "log.cleaner.backoff.ms": "500", "log.cleaner.min.cleanable.ratio": "0.01",
              "log.cleaner.min.compaction.lag.ms": "0"}
CLASSIC = {"heartbeat.interval.ms": 300, "session.timeout.ms": 6000, "enable.auto.commit": False,
           "partition.assignment.strategy": "range"}


@pytest.fixture(scope="module")
def secured():
    """(broker, its PLAINTEXT cluster, the reader's Java client settings on the SASL listener)."""
    password = secrets.token_hex(12)
    with EmbeddedKafka(sasl_users={READER: password}, overrides={**AUTHORIZER, **COMPACTING}) as broker:
        reader = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                  "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                      f'username="{READER}" password="{password}";'}
        yield broker, KafkaCluster(broker.bootstrap_servers, broker=broker), reader


def _config(lake_path, bootstrap: str, **given) -> PipelineConfig:
    return PipelineConfig(bootstrap_servers=bootstrap, lake_path=str(lake_path), broker_source="on", **given)


def _grant(cluster: KafkaCluster, operation: AclOperation, name: str = OFFSETS_TOPIC,
           kind: ResourceType = ResourceType.TOPIC, pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> None:
    binding = AclBinding(kind, name, pattern, f"User:{READER}", "*", operation, AclPermissionType.ALLOW)
    admin = cluster.admin()  # held until the answers are in: a collected client never completes its futures
    for future in admin.create_acls([binding]).values():
        future.result(30)
    time.sleep(1)  # the authorizer applies ACLs from the metadata log


def _settle(consumers, expected: list[int], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while [len(c.assignment()) for c in consumers] != expected:
        for c in consumers:
            c.poll(0.05)
        assert time.monotonic() < deadline, [len(c.assignment()) for c in consumers]


def _commit_all(consumers, topic: str, offset: int) -> None:
    for c in consumers:
        parts = [TopicPartition(topic, tp.partition, offset) for tp in c.assignment()]
        if parts:
            c.commit(offsets=parts, asynchronous=False)


def _rows(spark, config, table, group: str):
    return lake.read(spark, config.lake_path, table).where(F.col("group_id") == group)


def _handed_over(spark, config, group: str, leaving, staying, holds: int) -> tuple[list, str]:
    """``leaving`` closes, ``staying`` takes over (``holds`` partitions then), the stage runs: the
    handoffs from ``leaving`` it landed, and ``staying``'s member id."""
    left, stays = leaving.memberid(), staying.memberid()
    leaving.close()
    _settle([staying], [holds])
    run_stage(spark, config, "broker", progress=lambda _m: None)
    staying.close()
    return (_rows(spark, config, catalog.BROKER_OWNERSHIP, group)
            .where((F.col("kind") == "assigned") & (F.col("previous_owner") == left)).collect()), stays


def test_a_reader_without_the_acl_gets_one_line_then_the_history_once_granted(spark, secured, tmp_path):
    broker, cluster, reader = secured
    topic = cluster.create_topic(f"acl-{uuid.uuid4().hex[:6]}", partitions=2)
    group = f"acl-group-{uuid.uuid4().hex[:6]}"
    a = cluster.consumer(group, **CLASSIC)
    a.subscribe([topic])
    _settle([a], [2])
    _commit_all([a], topic, 1)
    config = _config(tmp_path / "lake", broker.sasl_bootstrap_servers, broker_kafka_options={"*": reader})
    # nothing: the topic refused; READ on it: the reader's group (Spark's consumer asks its offsets)
    for grant, error in ((None, "TOPIC_AUTHORIZATION_FAILED"), (AclOperation.READ, "GROUP_AUTHORIZATION_FAILED")):
        if grant is not None:
            _grant(cluster, grant)
        with pytest.raises(LensError) as refused:
            run_stage(spark, config, "broker", progress=lambda _m: None)
        line = str(refused.value)
        assert "\n" not in line and f"READ on Topic:{OFFSETS_TOPIC}" in line and "Admin API" in line, line
        assert f"DESCRIBE on the groups prefixed {READER_GROUP}" in line and error in line, line
    _grant(cluster, AclOperation.DESCRIBE, READER_GROUP, ResourceType.GROUP, ResourcePatternType.PREFIXED)
    said: list[str] = []
    counts = run_stage(spark, config, "broker", progress=said.append)
    a.close()
    assert counts["records"] > 0 and _rows(spark, config, catalog.BROKER_GENERATIONS, group).count() >= 1
    assert any(f"no log ends of {topic}" in line and "DESCRIBE" in line for line in said), said
    _grant(cluster, AclOperation.DESCRIBE, topic)
    b = cluster.consumer(group, **CLASSIC)  # a second round, a handoff whose log ends can now be read
    b.subscribe([topic])
    _settle([b], [2])
    run_stage(spark, config, "broker", progress=lambda _m: None)
    b.close()
    assert lake.read(spark, config.lake_path, catalog.BROKER_LOG_ENDS).where(F.col("topic") == topic).count() > 0


def _gappy(cluster: KafkaCluster, timeout_s: float = 90) -> None:
    """Once the cleaner has compacted some of the topic (offsets missing below the end)."""
    deadline = time.monotonic() + timeout_s
    while True:
        records = read_offsets_topic({"bootstrap.servers": cluster.bootstrap_servers})
        by_partition: dict[int, list[int]] = {}
        for r in records:
            by_partition.setdefault(r.partition, []).append(r.offset)
        if any(max(o) + 1 - min(o) > len(o) for o in by_partition.values()):
            return
        assert time.monotonic() < deadline, "the cleaner compacted nothing"
        time.sleep(2)


def test_a_compacted_first_scan_rebuilds_the_current_owners_and_goes_on_from_them(spark, secured, tmp_path):
    _, cluster, _ = secured
    topic = cluster.create_topic(f"compacted-{uuid.uuid4().hex[:6]}", partitions=4)
    group = f"compacted-{uuid.uuid4().hex[:6]}"
    a, b = cluster.consumer(group, **CLASSIC), cluster.consumer(group, **CLASSIC)
    a.subscribe([topic])
    _settle([a], [4])
    for offset in range(1, 30):  # many commits of each partition: the cleaner keeps the last
        _commit_all([a], topic, offset)
        time.sleep(0.1)
    b.subscribe([topic])
    _settle([a, b], [2, 2])
    _commit_all([a, b], topic, 40)
    _gappy(cluster)
    config = _config(tmp_path / "lake", cluster.bootstrap_servers)
    run_stage(spark, config, "broker", progress=lambda _m: None)
    changes = _rows(spark, config, catalog.BROKER_OWNERSHIP, group).orderBy("offset").collect()
    owners = {}
    for change in changes:
        owners[change.partition] = change.owner
    held = {tp.partition: c.memberid() for c in (a, b) for tp in c.assignment()}
    assert owners == held, "the current owners, from what the cleaner left"
    audit = lake.read(spark, config.lake_path, catalog.BROKER_DECODED)
    read = audit.where("outcome = 'decoded'").agg(F.sum("records")).first()[0]
    spanned = sum(r.to_offset - r.from_offset for r in audit.select("offsets_partition", "from_offset", "to_offset")
                  .distinct().collect())
    assert 0 < read < spanned, "the cleaned offsets read through, not counted"
    moved, _ = _handed_over(spark, config, group, b, a, 4)
    assert len(moved) == 2, "b's partitions handed to a: the previous owner came from the first scan's state"


def test_a_group_deleted_and_recreated_starts_over(spark, secured, tmp_path):
    _, cluster, _ = secured
    topic = cluster.create_topic(f"again-{uuid.uuid4().hex[:6]}", partitions=2)
    group = f"again-{uuid.uuid4().hex[:6]}"
    config = _config(tmp_path / "lake", cluster.bootstrap_servers)
    members = []
    for _ in range(2):
        member = cluster.consumer(group, **CLASSIC)
        member.subscribe([topic])
        _settle([member], [2])
        _commit_all([member], topic, 5)
        members.append(member.memberid())
        member.close()
        run_stage(spark, config, "broker", progress=lambda _m: None)
        if len(members) == 1:
            admin = cluster.admin()
            for future in admin.delete_consumer_groups([group]).values():
                future.result(30)
    generations = _rows(spark, config, catalog.BROKER_GENERATIONS, group).orderBy("offset").collect()
    assert "deleted" in [g.kind for g in generations]
    after = generations[[g.kind for g in generations].index("deleted") + 1:]
    assert after and after[0].failed_rounds is None and after[0].left == []
    changes = _rows(spark, config, catalog.BROKER_OWNERSHIP, group).collect()
    second = [c for c in changes if c.owner == members[1]]
    assert len(second) == 2 and all(c.previous_owner is None for c in second), "no handoff across incarnations"
    deleted = _rows(spark, config, catalog.BROKER_COMMITS, group).where(F.array_contains("reasons", "deleted"))
    assert deleted.count() == 2, "the deletion's offset tombstones kept"


def test_a_coordinator_reload_loses_nothing(spark, secured, tmp_path):
    broker, cluster, _ = secured
    topic = cluster.create_topic(f"reload-{uuid.uuid4().hex[:6]}", partitions=2)
    group = f"reload-{uuid.uuid4().hex[:6]}"
    settings = {"group.protocol": "consumer", "enable.auto.commit": False}
    config = _config(tmp_path / "lake", cluster.bootstrap_servers)
    a, b = cluster.consumer(group, **settings), cluster.consumer(group, **settings)
    a.subscribe([topic])
    b.subscribe([topic])
    _settle([a, b], [1, 1])
    run_stage(spark, config, "broker", progress=lambda _m: None)
    broker.restart()  # the coordinator unloads its groups and loads them again from the log
    _settle([a, b], [1, 1])
    handoff, a_id = _handed_over(spark, config, group, b, a, 2)
    assert handoff and handoff[-1].owner == a_id
    held: dict[int, str] = {}  # each change follows from the one before (no record lost over the reload):
    for change in _rows(spark, config, catalog.BROKER_OWNERSHIP, group).orderBy("offset").collect():
        assert change.previous_owner == held.get(change.partition), change  # its previous owner, the last holder
        held[change.partition] = change.owner or change.previous_owner
    assert held == {0: a_id, 1: a_id}
    slices = lake.read(spark, config.lake_path, catalog.BROKER_DECODED).select(
        "offsets_partition", "from_offset", "to_offset").distinct().collect()
    by_partition: dict[int, list] = {}
    for s in slices:
        by_partition.setdefault(s.offsets_partition, []).append((s.from_offset, s.to_offset))
    assert all(all(x[1] == y[0] for x, y in zip(sorted(r), sorted(r)[1:])) for r in by_partition.values())


def _table(spark, config, table) -> list[dict]:
    rows = [r.asDict(recursive=True) for r in lake.read(spark, config.lake_path, table).collect()]
    return sorted(rows, key=lambda r: (r["offsets_partition"], r.get("offset") or 0, str(r)))


def test_a_run_in_slices_killed_between_two_lands_what_one_slice_lands(spark, kafka, offsets_capture, tmp_path,
                                                                     monkeypatch):
    """On the session's broker (no compaction: both runs read the same records, up to one time)."""
    from pipelines.broker import stage as broker

    time.sleep(max(0.0, 11 - (time.time() - max(s.at_ms for s in offsets_capture.steps) / 1000)))
    until = int(time.time() * 1000)  # the static members' session timeouts passed: their groups' last records
    whole = _config(tmp_path / "whole", kafka.bootstrap_servers, ingest_until_ms=until)
    run_stage(spark, whole, "broker", progress=lambda _m: None)
    ends = {r.offsets_partition: r.next_offset for r in lake.read(spark, whole.lake_path, catalog.BROKER_STATE)
            .where("group_id IS NULL").collect()}
    sliced = _config(tmp_path / "sliced", kafka.bootstrap_servers, broker_max_records=sum(ends.values()) // 4 + 1,
                     ingest_until_ms=until)
    original, calls = broker.write_state, []

    def dies_on_the_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("killed")
        return original(*args, **kwargs)

    monkeypatch.setattr(broker, "write_state", dies_on_the_third)
    with pytest.raises(RuntimeError, match="killed"):
        run_stage(spark, sliced, "broker", progress=lambda _m: None)
    said: list[str] = []
    run_stage(spark, sliced, "broker", progress=said.append)
    assert sum("landed in" in line for line in said) >= 2, said
    for table in (catalog.BROKER_GENERATIONS, catalog.BROKER_EVENTS, catalog.BROKER_OWNERSHIP, catalog.BROKER_COMMITS,
                  catalog.BROKER_STATE):
        assert _table(spark, sliced, table) == _table(spark, whole, table), table.path


def test_two_clusters_keep_their_groups_apart(spark, secured, kafka, tmp_path):
    _, cluster, _ = secured
    group = f"twin-{uuid.uuid4().hex[:6]}"
    for where in (cluster, kafka):
        topic = where.create_topic(f"twin-{uuid.uuid4().hex[:6]}", partitions=1)
        member = where.consumer(group, **CLASSIC)
        member.subscribe([topic])
        _settle([member], [1])
        _commit_all([member], topic, 3)
        member.close()
    config = _config(tmp_path / "lake", kafka.bootstrap_servers,
                     broker_clusters=f"{kafka.bootstrap_servers};{cluster.bootstrap_servers}")
    assert run_stage(spark, config, "broker", progress=lambda _m: None)["clusters"] == 2
    generations = _rows(spark, config, catalog.BROKER_GENERATIONS, group).collect()
    clusters = {g.cluster_id for g in generations}
    assert len(clusters) == 2
    for cluster_id in clusters:
        mine = [g for g in generations if g.cluster_id == cluster_id]
        assert [g.generation for g in mine if g.kind == "generation"] == [1], mine
