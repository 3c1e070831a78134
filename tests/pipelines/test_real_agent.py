"""The pipeline on telemetry from the real agent (InstrumentedConsumer on the real broker).

Outline: member A reads a 4-partition topic alone and commits every 100 records, so a tail
stays uncommitted; member B joins (eager range: everything is revoked and re-assigned); then
A leaves and B takes its partitions. Every record re-delivered is counted by record id, and
gold's confirmed duplicates, summed over the handoffs, must equal that count exactly.
"""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.stages import DATA_STAGES, run_pipeline
from tests.support.members import PROTOCOLS, Member, duplicates, settle
from tests.support.lakes import fresh_config


@pytest.mark.slow  # about 1 min of real members; gold's duplicates against truth: tests/e2e/test_gold_vs_truth.py
def test_gold_duplicates_equal_redelivered_records(spark, kafka, unique, tmp_path):
    config = fresh_config(kafka, tmp_path, episode_gap_s=2.0)  # the phases below are >= 4 s apart
    topic = kafka.create_topic(f"work-{unique}", partitions=4)
    ids = kafka.seed_partitions(topic, 4, 257)
    member_config = kafka.consumer_config(f"app-{unique}", **PROTOCOLS["range"], **{
        "enable.auto.commit": False, "lens.telemetry.topic": config.topic})
    a = Member(dict(member_config), topic, commit_every=100)
    settle([a], ids)
    b = Member(dict(member_config), topic, commit_every=100)
    settle([a, b], ids, quiet_s=4.0)
    a.stop()
    settle([a, b], ids, quiet_s=4.0)
    b.stop()
    truth = duplicates(a, b)
    assert truth > 0

    run_pipeline(spark, config, DATA_STAGES, progress=lambda m: None)
    handoffs = lake.read(spark, config.lake_path, catalog.HANDOFFS)
    got = handoffs.agg(F.sum("duplicates").alias("d"), F.count("*").alias("n"),
                       F.min("pause_s").alias("u")).first()
    assert got["d"] == truth
    assert got["n"] >= 4 and got["u"] >= 0
    causes = {r["cause"] for r in lake.read(spark, config.lake_path, catalog.EPISODES).collect()}
    assert {"scale_out", "scale_in"} <= causes, causes
