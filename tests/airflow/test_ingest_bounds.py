"""Ingest as the hourly DAG drives it: bounded by a time, exactly once without a checkpoint.

A run with ``ingest_until_ms`` lands, per partition, the records before the first one stamped at
or after it, in as many commits as ``max_offsets_per_trigger`` asks; the next run continues from
the offsets recorded in bronze's last commit. Two runs planned from the same bronze version (a
retry racing the original) land once. A bronze table landed before the offsets were recorded
(by the streaming ingest of earlier versions) continues after the largest offset it holds.
"""
from __future__ import annotations

import dataclasses

from delta.tables import DeltaTable
from pyspark.sql import functions as F

from lens_scenarios.synthetic import BASE_TIME_MS, long_lived_telemetry
from pipelines import catalog, ingest, lake
from tests.support.lakes import fresh_config

HOUR_MS = 3_600_000


def _fed(kafka, tmp_path, **overrides):
    config = fresh_config(kafka, tmp_path, **overrides)
    records = list(long_lived_telemetry(groups=2, members=3, partitions=6, hours=2, tick_s=300, restart_every_h=1))
    kafka.feed(config.topic, records)  # hour by hour: the first record stamped in hour 1 ends hour 0's slice
    return config, records


def _landed_once(spark, config) -> int:
    bronze = lake.read(spark, config.lake_path, catalog.BRONZE)
    count = bronze.count()
    assert bronze.select("kafka_partition", "kafka_offset").distinct().count() == count, "a record landed twice"
    return count


def test_a_bounded_run_lands_its_hour_in_commits_then_the_next_continues(spark, kafka, tmp_path):
    config, records = _fed(kafka, tmp_path, ingest_until_ms=BASE_TIME_MS + HOUR_MS, max_offsets_per_trigger=120)
    first_hour = sum(t < BASE_TIME_MS + HOUR_MS for _, _, t in records)
    assert ingest.run(spark, config, progress=lambda _m: None) == {"rows": first_hour}
    bronze = lake.read(spark, config.lake_path, catalog.BRONZE)
    assert bronze.agg(F.max("kafka_timestamp")).first()[0].timestamp() * 1000 < BASE_TIME_MS + HOUR_MS
    commits = DeltaTable.forPath(spark, catalog.BRONZE.location(config.lake_path)).history().count()
    assert commits >= 2  # 40 records a partition a commit
    newest = DeltaTable.forPath(spark, catalog.BRONZE.location(config.lake_path)).history(1).first()
    # read from the newest commit's log file, as the history says
    assert ingest.landed(spark, config) == ingest.Landed(newest.version, ingest.landed_through(newest.userMetadata))
    assert ingest.run(spark, config, progress=lambda _m: None) == {"rows": 0}
    rest = dataclasses.replace(config, ingest_until_ms=None, max_offsets_per_trigger=None)
    assert ingest.run(spark, rest, progress=lambda _m: None) == {"rows": len(records) - first_hour}
    assert _landed_once(spark, config) == len(records)


def test_two_runs_planned_from_one_version_land_once(spark, kafka, tmp_path):
    config, records = _fed(kafka, tmp_path)
    log = ingest.log_offsets(config, ingest.check_topic(config))
    state = ingest.landed(spark, config)
    starts, ends = ingest.next_range(config, log, state)
    assert ingest.land(spark, config, state, starts, ends) == len(records)
    assert ingest.land(spark, config, state, starts, ends) == 0  # Delta skips the second (same txn version)
    assert ingest.run(spark, config, progress=lambda _m: None) == {"rows": 0}
    assert _landed_once(spark, config) == len(records)


def test_a_bronze_without_recorded_offsets_continues_after_its_last_ones(spark, kafka, tmp_path):
    config, records = _fed(kafka, tmp_path)
    ingest.run(spark, config, progress=lambda _m: None)
    older = dataclasses.replace(config, lake_path=str(tmp_path / "older" / "lake"), checkpoint_path="")
    (lake.read(spark, config.lake_path, catalog.BRONZE).where("kafka_offset < 40")  # as a plain append left it
     .write.format("delta").partitionBy("date").save(catalog.BRONZE.location(older.lake_path)))
    kept = lake.read(spark, older.lake_path, catalog.BRONZE).count()
    assert 0 < kept < len(records)
    assert ingest.run(spark, older, progress=lambda _m: None) == {"rows": len(records) - kept}
    assert _landed_once(spark, older) == len(records)
