"""The broker restarts in the middle of an ingest: the run goes on (or fails and its rerun lands
the rest), and bronze, the quarantine and silver hold what an ingest without the restart lands,
each record once.

A broker of its own (the session's serves the other tests), 60,000 telemetry records, and
ingest in slices of 3,000 records per Delta commit: once two commits are in, the broker is
stopped (a controlled shutdown), stays away 5 s and comes back on the same port and data. Then
a second lake ingests and validates the same topic without a fault.

Slow (a broker of its own): ``./lens test -m slow tests/hardening/test_broker_restart.py``.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.errors import AnalysisException

from lens_runtime.kafka_broker import EmbeddedKafka
from lens_scenarios.synthetic import fleet_telemetry
from pipelines import catalog
from pipelines.config import PipelineConfig
from pipelines.stages import run_pipeline
from tests.support.accounting import assert_bronze_adds_up
from tests.support.kafka_cluster import KafkaCluster
from tests.support.lake_snapshot import differences, snapshot

SLICE = 3_000
TABLES = (catalog.BRONZE, catalog.QUARANTINE, catalog.EVENTS)


def _commits(spark, config: PipelineConfig) -> int:
    path = catalog.BRONZE.location(config.lake_path)
    if not (Path(path) / "_delta_log").is_dir():
        return 0
    try:
        return DeltaTable.forPath(spark, path).history().count()
    except AnalysisException:  # the log folder is there, its first commit not yet
        return 0


@pytest.mark.slow
def test_a_broker_restart_in_the_middle_of_an_ingest_loses_and_doubles_nothing(spark, tmp_path):
    with EmbeddedKafka() as broker:
        kafka = KafkaCluster(broker.bootstrap_servers, broker=broker)
        topic = kafka.create_topic("restart-telemetry", partitions=2, config={"retention.ms": "-1"})
        sent = kafka.feed(topic, fleet_telemetry(groups=400, members=3, partitions=6, rounds=6))
        config = PipelineConfig(bootstrap_servers=broker.bootstrap_servers, topic=topic,
                                lake_path=str(tmp_path / "restarted" / "lake"), max_offsets_per_trigger=SLICE)
        restart: dict[str, float] = {}
        outcome: dict[str, object] = {}

        def ingest() -> None:
            try:
                run_pipeline(spark, config, ("ingest",), progress=lambda _m: None)
            except Exception as err:  # noqa: BLE001 - a run may fail on the restart; its rerun must make up for it
                outcome["failed"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
            outcome["finished_at"] = time.monotonic()

        # The ingest runs in a thread and the broker restarts from this one: a broker started
        # from a thread that then ends would get its parent-death signal (see EmbeddedKafka._java).
        running = threading.Thread(target=ingest, daemon=True)
        running.start()
        while _commits(spark, config) < 2 and running.is_alive():
            time.sleep(0.2)
        restart["commits_before"] = _commits(spark, config)
        restart["down_at"] = time.monotonic()
        broker.restart(down_s=5)
        restart["up_after_s"] = time.monotonic() - restart["down_at"]
        running.join(600)
        assert not running.is_alive(), "the ingest did not end within 10 min of the restart"
        failed, finished_at = outcome.get("failed"), outcome["finished_at"]
        ended = _commits(spark, config)
        assert restart["down_at"] < finished_at, "the ingest had ended before the restart"
        run_pipeline(spark, config, ("ingest", "validate"), progress=lambda _m: None)  # the rerun
        clean = dataclasses.replace(config, lake_path=str(tmp_path / "clean" / "lake"), checkpoint_path="")
        run_pipeline(spark, clean, ("ingest", "validate"), progress=lambda _m: None)
        print(f"\n{sent:,} records; the broker went down after {restart['commits_before']} ingest commits and was "
              f"back {restart['up_after_s']:.1f} s later; the run {'failed: ' + failed if failed else 'went on'}; "
              f"{ended} commits by its end")
        totals = assert_bronze_adds_up(spark, config.lake_path)
        assert totals["bronze"] == sent
        assert differences(snapshot(spark, config.lake_path, TABLES, marts=False, drop=("validate_batch",)),
                           snapshot(spark, clean.lake_path, TABLES, marts=False, drop=("validate_batch",))) == {}
