"""The pipeline killed with SIGKILL inside every stage, each time rerun: the lake ends as one
uninterrupted run leaves it, every table and every SQL mart.

A real ``rebalance-lens pipeline run all`` process (its own JVM) is killed inside ingest, then
the next run inside validate, the next inside silver, gold, recommend and the SQL build: each
run resumes from what the killed one left. A kill that came after its stage's ``done`` line
is no kill inside it: the run is repeated with half the delay. Then one run completes, and the
lake is compared with a clean lake over the same topic, table by table and mart by mart.

Slow (six JVM start-ups and a full run): ``./lens test -m slow tests/hardening/test_kill_every_stage.py``.
The default suite kills once, inside silver (tests/pipelines/test_crash_recovery.py).
"""
from __future__ import annotations

import dataclasses

import pytest

from lens_scenarios.synthetic import fleet_telemetry
from pipelines import lake
from pipelines.config import embedded_broker_groups
from pipelines.stages import STAGES, run_pipeline
from tests.support.fleets import scale_out_then_crash
from tests.support.lake_snapshot import differences, snapshot
from tests.support.lakes import fresh_config
from tests.support.pipeline_process import run_and_kill

# What a clean run over well-formed telemetry leaves empty: no record is rejected, and no
# closed-loop check was run (those come from `recommend --verify`).
NOTHING_TO_HOLD = {"bronze/quarantine", "gold/verifications", "marts/quarantine_daily", "marts/recommendation_checks"}
# seconds after "[stage] starting" to kill: well inside each stage on 2 busy cores
DELAY_S = {"ingest": 1.5, "validate": 4.0, "silver": 2.0, "gold": 4.0, "recommend": 3.0, "sql": 20.0}


@pytest.mark.slow
def test_killed_inside_every_stage_then_rerun_equals_one_clean_run(spark, kafka, tmp_path):
    config = fresh_config(kafka, tmp_path / "killed", **embedded_broker_groups())
    kafka.feed(config.topic, scale_out_then_crash().keyed()
               + list(fleet_telemetry(groups=4, members=3, partitions=6, rounds=4)))
    kills = []
    for stage in STAGES:
        delay = DELAY_S[stage]
        for _attempt in range(4):
            marks = {s: lake.stage_mark(spark, config.lake_path, s) for s in STAGES if s != "ingest"}
            killed = run_and_kill(config, f"[{stage}] starting", delay)
            if not killed.finished(stage):
                break
            delay /= 2  # the stage was done before the kill: again, sooner
        assert not killed.finished(stage), f"could not kill inside {stage}"
        after = {s: lake.stage_mark(spark, config.lake_path, s) for s in marks}
        kills.append((stage, round(killed.after_marker_s, 1), marks, after))
        assert after.get(stage, -2) == marks.get(stage, -2), f"{stage}'s mark moved: the kill came after its end"
    for stage, at, before, after in kills:
        print(f"\nkilled {at} s into {stage}: marks {before} -> {after}")
    run_pipeline(spark, config, progress=lambda _m: None)  # the rerun that completes
    clean = dataclasses.replace(config, lake_path=str(tmp_path / "clean" / "lake"), checkpoint_path="")
    run_pipeline(spark, clean, progress=lambda _m: None)
    got, want = snapshot(spark, config.lake_path), snapshot(spark, clean.lake_path)
    empty = {name for name, rows in want.items() if not rows}
    assert len(want) > 25 and empty <= NOTHING_TO_HOLD, sorted(empty - NOTHING_TO_HOLD)
    assert differences(got, want) == {}
