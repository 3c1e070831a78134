"""The broker restarts in the middle of an ingest: the run goes on (or fails and its rerun lands
the rest), and bronze, the quarantine and silver hold what an ingest without the restart lands,
each record once.

A broker of its own (the session's serves the other tests), 60,000 telemetry records, and
ingest (the CLI, a process of its own) in slices of 3,000 records per Delta commit: once two
commits are in, the broker is stopped (a controlled shutdown), stays away 5 s and comes back
on the same port and data. Then a second lake ingests and validates the same topic without a
fault.

Slow (a broker of its own): ``./lens test -m slow tests/hardening/test_broker_restart.py``.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from lens_runtime.kafka_broker import EmbeddedKafka
from lens_scenarios.synthetic import fleet_telemetry
from pipelines import catalog
from pipelines.config import PipelineConfig
from pipelines.stages import run_pipeline
from tests.support.accounting import assert_bronze_adds_up
from tests.support.kafka_cluster import KafkaCluster
from tests.support.lake_snapshot import differences, snapshot
from tests.support.pipeline_process import start

SLICE = 3_000
TABLES = (catalog.BRONZE, catalog.QUARANTINE, catalog.EVENTS)


def _commits(config: PipelineConfig) -> int:
    """Bronze's Delta commits so far, from its log's files (no Spark call while the ingest runs)."""
    return len(list((Path(catalog.BRONZE.location(config.lake_path)) / "_delta_log").glob("[0-9]*.json")))


@pytest.mark.slow
def test_a_broker_restart_in_the_middle_of_an_ingest_loses_and_doubles_nothing(spark, tmp_path):
    with EmbeddedKafka() as broker:
        kafka = KafkaCluster(broker.bootstrap_servers, broker=broker)
        topic = kafka.create_topic("restart-telemetry", partitions=2, config={"retention.ms": "-1"})
        sent = kafka.feed(topic, fleet_telemetry(groups=400, members=3, partitions=6, rounds=6))
        config = PipelineConfig(bootstrap_servers=broker.bootstrap_servers, topic=topic,
                                lake_path=str(tmp_path / "restarted" / "lake"), max_offsets_per_trigger=SLICE)
        # The ingest runs as the CLI, in a process of its own, and the broker restarts from here (a
        # version that ran Spark from a helper thread was followed by a py4j protocol error in the
        # next test's Spark calls).
        running = start(config, "ingest", "--max-offsets-per-trigger", str(SLICE))
        while _commits(config) < 2 and running.poll() is None:
            time.sleep(0.2)
        commits_before, still_running = _commits(config), running.poll() is None
        down_at = time.monotonic()
        broker.restart(down_s=5)
        up_after_s = time.monotonic() - down_at
        output = running.communicate(timeout=900)[0]
        assert still_running, f"the ingest had ended before the restart:\n{output[-2000:]}"
        errors = [line for line in output.splitlines() if line.startswith("rebalance-lens: error:")]
        # a run may fail on the restart; its rerun must make up for it
        failed = (errors or [f"exit code {running.returncode}"])[0][:200] if running.returncode else None
        ended = _commits(config)
        run_pipeline(spark, config, ("ingest", "validate"), progress=lambda _m: None)  # the rerun
        clean = dataclasses.replace(config, lake_path=str(tmp_path / "clean" / "lake"), checkpoint_path="")
        run_pipeline(spark, clean, ("ingest", "validate"), progress=lambda _m: None)
        print(f"\n{sent:,} records; the broker went down after {commits_before} ingest commits and was "
              f"back {up_after_s:.1f} s later; the run {'failed: ' + failed if failed else 'went on'}; "
              f"{ended} commits by its end")
        totals = assert_bronze_adds_up(spark, config.lake_path)
        assert totals["bronze"] == sent
        assert differences(snapshot(spark, config.lake_path, TABLES, marts=False, drop=("validate_batch",)),
                           snapshot(spark, clean.lake_path, TABLES, marts=False, drop=("validate_batch",))) == {}
