"""Two pipeline runs started at once on one lake: one runs, the other stops at once with one line
naming the holder (or, with --lock-wait, waits and then finds nothing to do); no table is
corrupted or written twice: the lake equals one run's.

Slow (four JVM start-ups): ``./lens test -m slow tests/hardening/test_concurrent_runs.py``. The
lock itself, without Spark: tests/hardening/test_lake_lock.py.
"""
from __future__ import annotations

import dataclasses

import pytest

from lens_scenarios.synthetic import fleet_telemetry
from pipelines.config import embedded_broker_groups
from pipelines.stages import run_pipeline
from tests.support.fleets import scale_out_then_crash
from tests.support.lake_snapshot import differences, snapshot
from tests.support.lakes import fresh_config
from tests.support.pipeline_process import start


def _race(config, *extra: str) -> list[tuple[int, str]]:
    """Two runs of the data stages started together; each one's exit code and output."""
    procs = [start(config, "all", *extra) for _ in range(2)]
    outputs = [p.communicate(timeout=900)[0] for p in procs]
    return [(p.returncode, out) for p, out in zip(procs, outputs)]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # four child runs and two in-process ones: about 10 min on 2 cores, over the default 600 s
def test_two_runs_at_once_one_refused_and_the_lake_is_one_runs(spark, kafka, tmp_path):
    config = fresh_config(kafka, tmp_path / "raced", **embedded_broker_groups())
    kafka.feed(config.topic, scale_out_then_crash().keyed() + list(fleet_telemetry(groups=3, members=3, partitions=6,
                                                                                   rounds=3)))
    results = sorted(_race(config))
    (ran, ran_output), (refused, refused_output) = results
    assert (ran, refused) == (0, 2), results
    error = [line for line in refused_output.splitlines() if line.startswith("rebalance-lens: error:")]
    assert len(error) == 1 and "is in use by another run" in error[0] and "--lock-wait" in error[0], refused_output
    print(f"\nrefused: {error[0]}")

    clean = dataclasses.replace(config, lake_path=str(tmp_path / "clean" / "lake"), checkpoint_path="")
    run_pipeline(spark, clean, progress=lambda _m: None)
    assert differences(snapshot(spark, config.lake_path), snapshot(spark, clean.lake_path)) == {}

    # with --lock-wait both runs finish: the second waits, then finds nothing new
    kafka.feed(config.topic, list(fleet_telemetry(groups=2, members=2, partitions=4, rounds=2, seed=5)))
    waited = _race(config, "--lock-wait", "900")
    assert [code for code, _ in waited] == [0, 0], waited
    assert sum("ingest: 0 new record(s)" in out for _, out in waited) == 1, [out[-2000:] for _, out in waited]
    run_pipeline(spark, clean, progress=lambda _m: None)
    assert differences(snapshot(spark, config.lake_path), snapshot(spark, clean.lake_path)) == {}
