"""Killing the pipeline in the middle of a stage, then rerunning it, gives the gold of one clean run.

The killed run is a real `rebalance-lens pipeline run` process (its own JVM), killed with
SIGKILL once it is inside the silver stage; the rerun and the clean run use the test
session on the same topic, the clean one on its own lake. Gold is compared row by row.
(Killed inside every stage, the SQL build included, and every table and mart compared:
tests/hardening/test_kill_every_stage.py.) Slow (its own JVM, about 2 min):
``./lens test -m slow tests/pipelines/test_crash_recovery.py``.
"""
from __future__ import annotations

import dataclasses

import pytest

from pipelines import catalog, lake
from pipelines.config import PipelineConfig
from pipelines.stages import DATA_STAGES, run_pipeline
from lens_scenarios.synthetic import fleet_telemetry
from tests.support.lakes import fresh_config
from tests.support.fleets import scale_out_then_crash
from tests.support.pipeline_process import run_and_kill


def _gold(spark, config: PipelineConfig) -> dict[str, list]:
    out = {}
    for table in (catalog.HANDOFFS, catalog.EPISODES, catalog.METRICS, catalog.OWNERSHIP, catalog.MEMBERS,
                  catalog.WHAT_IF, catalog.RECOMMENDATIONS):
        df = lake.read(spark, config.lake_path, table).drop("evidence_query")  # it names the lake's path
        out[table] = sorted(tuple(str(v) for v in r) for r in df.select(*sorted(df.columns)).collect())
    return out


@pytest.mark.slow
def test_killed_mid_stage_then_rerun_equals_clean_run(spark, kafka, tmp_path):
    config = fresh_config(kafka, tmp_path / "killed")
    records = scale_out_then_crash().keyed() + list(fleet_telemetry(groups=3, members=3, partitions=6, rounds=3))
    kafka.feed(config.topic, records)
    killed = run_and_kill(config, "[silver] starting", delay_s=2.0)
    assert not killed.finished("silver"), "the kill came too late: silver had finished"
    assert lake.stage_mark(spark, config.lake_path, "gold") == -1, "the kill came too late: gold had finished"
    run_pipeline(spark, config, DATA_STAGES, progress=lambda m: None)
    clean = dataclasses.replace(config, lake_path=str(tmp_path / "clean" / "lake"), checkpoint_path="")
    run_pipeline(spark, clean, DATA_STAGES, progress=lambda m: None)
    killed_gold, clean_gold = _gold(spark, config), _gold(spark, clean)
    assert len(clean_gold[catalog.HANDOFFS]) > 20
    assert killed_gold == clean_gold
