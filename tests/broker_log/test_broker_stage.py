"""The broker stage on the session's Spark and broker: ``__consumer_offsets`` (the captured groups'
records among every other test's) tailed into the lake, killed before its state commit, then
rerun, lands for each captured group the rows the history walk writes over the same records at
once, none twice; the next run reads only what came since. (Slices, and a kill between two:
tests/broker_log/test_broker_faults.py, slow.)"""
from __future__ import annotations

import time
import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.broker import stage as broker
from pipelines.broker.cluster_admin import ClusterAdmin
from pipelines.broker_log.commit_window import merged
from pipelines.broker_log.group_history import OUTPUTS, GroupHistory
from pipelines.broker_log.offsets_topic import OFFSETS_TOPIC, read_offsets_topic
from pipelines.broker_log.records import RecordDecoder, Skipped, record_row
from pipelines.broker_log.schema_set import schema_set
from pipelines.config import PipelineConfig
from pipelines.stages import run_stage


def _log_ends(kafka) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "lens-test-watermarks"})
    try:
        partitions = consumer.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC].partitions
        return {p: consumer.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=10)[1] for p in partitions}
    finally:
        consumer.close()


def _quiet(kafka, offsets_capture, still_s: float = 11.0, most_s: float = 45.0) -> None:
    """Once no record came for ``still_s`` since the capture's last step (its groups' static members
    are removed a session timeout, up to 10 s, after they closed), nor for 2 s."""
    last_step_s = max(s.at_ms for s in offsets_capture.steps) / 1000
    deadline, ends, since = time.monotonic() + most_s, _log_ends(kafka), time.monotonic()
    while time.monotonic() < deadline and (time.monotonic() - since < 2 or time.time() - last_step_s < still_s):
        time.sleep(1)
        now = _log_ends(kafka)
        if now != ends:
            ends, since = now, time.monotonic()


@pytest.fixture(scope="module")
def landed(spark, kafka, offsets_capture, tmp_path_factory):
    """The stage killed before its state commit, rerun, then run again: (config, counts of the rerun
    and of the last run, the topic's offsets each left, what they said)."""
    _quiet(kafka, offsets_capture)
    config = PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, broker_source="on",
                            lake_path=str(tmp_path_factory.mktemp("broker-lake") / "lake"))
    original = broker.write_state

    def killed(*args, **kwargs):
        raise RuntimeError("killed")

    broker.write_state = killed
    try:
        with pytest.raises(RuntimeError, match="killed"):
            run_stage(spark, config, "broker", progress=lambda _m: None)
    finally:
        broker.write_state = original
    said: list[str] = []
    rerun = run_stage(spark, config, "broker", progress=said.append)
    between = _progress(spark, config)
    again = run_stage(spark, config, "broker", progress=said.append)
    return config, rerun, again, (between, _progress(spark, config)), said


def _progress(spark, config) -> dict[int, int]:
    rows = lake.read(spark, config.lake_path, catalog.BROKER_STATE).where("group_id IS NULL").collect()
    return {r.offsets_partition: r.next_offset for r in rows}


def _expected(kafka, offsets_capture, through: dict[int, int]) -> dict[str, list[dict]]:
    """What the walk writes over each captured group's records before ``through`` (read again), at once."""
    decoder, groups = RecordDecoder(schema_set()), set(offsets_capture.groups.values())
    histories: dict[str, GroupHistory] = {}
    out: dict[str, list[dict]] = {name: [] for name in OUTPUTS}
    for raw in sorted(read_offsets_topic({"bootstrap.servers": kafka.bootstrap_servers}),
                      key=lambda r: (r.partition, r.offset)):
        record = decoder.decode(raw.key, raw.value)
        if isinstance(record, Skipped) or raw.offset >= through.get(raw.partition, 0):
            continue
        row = record_row(record, raw.partition, raw.offset, raw.timestamp_ms)
        if row["group_id"] in groups:
            history = histories.setdefault(row["group_id"], GroupHistory(row["group_id"], offsets_capture.topic_ids))
            history.feed(row)
            for name, made in history.taken().items():
                out[name] += made
    out["commits"] = merged(out["commits"])
    return {name: _in_order(rows) for name, rows in out.items()}


def _stored(spark, config, table, groups) -> list[dict]:
    rows = lake.read(spark, config.lake_path, table).where(F.col("group_id").isin(sorted(groups))).drop("cluster_id")
    return _in_order([r.asDict(recursive=True) for r in rows.collect()])


def _in_order(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["offsets_partition"], r.get("offset") or 0, str(r)))


def test_each_group_lands_what_its_walk_writes(spark, kafka, landed, offsets_capture):
    config, rerun, _, (_, through), said = landed
    expected = _expected(kafka, offsets_capture, through)
    groups = set(offsets_capture.groups.values())
    for kind, table in broker.HISTORY.items():
        assert _stored(spark, config, table, groups) == expected[kind], kind
        assert expected[kind], kind
    assert rerun["clusters"] == 1 and rerun["records"] >= len(offsets_capture.records) and rerun["skipped"] == 0
    assert any("landed in" in line for line in said), said


def test_the_groups_are_the_clusters_and_every_change_has_its_log_ends(spark, kafka, landed, offsets_capture):
    config = landed[0]
    with ClusterAdmin(spark, {"bootstrap.servers": kafka.bootstrap_servers}) as admin:
        cluster_id = admin.cluster_id()
    for table in (*broker.HISTORY.values(), catalog.BROKER_STATE, catalog.BROKER_LOG_ENDS):
        assert {r.cluster_id for r in lake.read(spark, config.lake_path, table).select("cluster_id").collect()} \
            == {cluster_id}, table.path
    changes = (lake.read(spark, config.lake_path, catalog.BROKER_OWNERSHIP)
               .where(F.col("group_id").isin(sorted(offsets_capture.groups.values()))).collect())
    ends = {(r.topic, r.partition, r.at_ms): r for r in lake.read(spark, config.lake_path,
                                                                   catalog.BROKER_LOG_ENDS).collect()}
    for change in changes:
        for column in broker.LOG_END_TIMES:
            at = change[column]
            assert at is None or (change.topic, change.partition, at) in ends, (change, column)
    assert all(0 <= e.log_end_offset <= 50 for e in ends.values() if e.topic == offsets_capture.topic)


def _each_offset_counted_once(spark, config) -> None:
    """The slices counted in audit/broker_decode follow each other per partition, none twice."""
    slices = (lake.read(spark, config.lake_path, catalog.BROKER_DECODED)
              .select("offsets_partition", "from_offset", "to_offset").distinct().collect())
    by_partition: dict[int, list[tuple[int, int]]] = {}
    for s in slices:
        by_partition.setdefault(s.offsets_partition, []).append((s.from_offset, s.to_offset))
    for partition, ranges in by_partition.items():
        ranges.sort()
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])), (partition, ranges)


def test_a_killed_run_rerun_counts_nothing_twice_and_a_second_run_reads_only_what_came_since(spark, landed):
    config, rerun, again, (between, through), said = landed
    assert again["records"] <= sum(through[p] - between[p] for p in through), again
    decoded = lake.read(spark, config.lake_path, catalog.BROKER_DECODED).where("outcome = 'decoded'")
    assert decoded.agg(F.sum("records")).first()[0] == rerun["records"] + again["records"], "killed slice's, replaced"
    _each_offset_counted_once(spark, config)
    assert list(broker.read_marks(spark, config).values()) == [through], "the state commit's mark: its rows'"
    commits = lake.read(spark, config.lake_path, catalog.BROKER_COMMITS)
    assert commits.count() == commits.select("offsets_partition", "offset").distinct().count()
