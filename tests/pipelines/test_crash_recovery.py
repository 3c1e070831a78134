"""Killing the pipeline in the middle of a stage, then rerunning it, gives the gold of one clean run.

The killed run is a real `rebalance-lens pipeline run` process (its own JVM), killed with
SIGKILL once it is inside the silver stage; the rerun and the clean run use the test
session on the same topic, the clean one on its own lake. Gold is compared row by row.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pipelines import catalog, lake
from pipelines.config import PipelineConfig
from pipelines.stages import DATA_STAGES, run_pipeline
from lens_scenarios.synthetic import fleet_telemetry
from tests.support.lakes import fresh_config
from tests.support.fleets import scale_out_then_crash

REPO = Path(__file__).resolve().parents[2]


def _run_and_kill(config: PipelineConfig, marker: str, delay_s: float) -> str:
    cmd = [sys.executable, "-m", "lens_cli.main", "pipeline", "run", "all", "--bootstrap", config.bootstrap_servers,
           "--topic", config.topic, "--lake", config.lake_path]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env={**os.environ, "LENS_SPARK_LOG_LEVEL": "ERROR"})
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if marker in line:
                time.sleep(delay_s)
                break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert any(marker in line for line in seen), "".join(seen[-30:])
    return "".join(seen)


def _gold(spark, config: PipelineConfig) -> dict[str, list]:
    out = {}
    for table in (catalog.HANDOFFS, catalog.EPISODES, catalog.METRICS, catalog.OWNERSHIP, catalog.MEMBERS,
                  catalog.WHAT_IF, catalog.RECOMMENDATIONS):
        df = lake.read(spark, config.lake_path, table).drop("evidence_query")  # it names the lake's path
        out[table] = sorted(tuple(str(v) for v in r) for r in df.select(*sorted(df.columns)).collect())
    return out


def test_killed_mid_stage_then_rerun_equals_clean_run(spark, kafka, tmp_path):
    config = fresh_config(kafka, tmp_path / "killed")
    records = scale_out_then_crash().keyed() + list(fleet_telemetry(groups=3, members=3, partitions=6, rounds=3))
    kafka.feed(config.topic, records)
    _run_and_kill(config, "[silver] starting", delay_s=2.0)
    assert lake.stage_mark(spark, config.lake_path, "gold") == -1, "the kill came too late: gold had finished"
    run_pipeline(spark, config, DATA_STAGES, progress=lambda m: None)
    clean = dataclasses.replace(config, lake_path=str(tmp_path / "clean" / "lake"), checkpoint_path="")
    run_pipeline(spark, clean, DATA_STAGES, progress=lambda m: None)
    killed_gold, clean_gold = _gold(spark, config), _gold(spark, clean)
    assert len(clean_gold[catalog.HANDOFFS]) > 20
    assert killed_gold == clean_gold
