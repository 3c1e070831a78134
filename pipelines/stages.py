"""The stage runner: the stages in order, each a function of ``(spark, config, progress)``.

``run_stage`` runs one stage and ``run_pipeline`` several, in order; the CLI, the tests, the
benchmarks and the scenario tools call these and nothing deeper. Each stage reads and
writes Delta tables only (``pipelines.catalog`` says which), records its progress after its
writes, and can be killed and rerun at any point. Both hold the lake's lock
(``pipelines.lake_lock``) while they run: one run writes a lake at a time; under it, before
the first stage, a lake written under older column names is renamed in place
(``pipelines.migrations``).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pyspark.sql import SparkSession

from lens_runtime.errors import LensError
from pipelines import ingest, lake_lock, migrations, silver, sql_build, validate
from pipelines.broker import stage as broker
from pipelines.config import PipelineConfig, Progress, describe
from pipelines.gold import stage as gold
from pipelines.gold import upgrade as gold_upgrade
from pipelines.recommend import stage as recommend

Stage = Callable[[SparkSession, PipelineConfig, Progress], dict[str, int]]
# In the order they run: each reads what the ones before it wrote.
STAGES: dict[str, Stage] = {"ingest": ingest.run, "broker": broker.run, "validate": validate.run, "silver": silver.run,
                             "gold": gold.run, "recommend": recommend.run, "sql": sql_build.run}
# The stages that write the lake's tables (the SQL build only reads them): what a caller that
# needs gold or recommendations, not the marts, runs.
DATA_STAGES = tuple(s for s in STAGES if s != "sql")


def resolve_stages(stages: Sequence[str]) -> list[str]:
    """The named stages in run order; ``all`` (or nothing) for every stage."""
    if not stages or "all" in stages:
        return list(STAGES)
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise LensError(f"unknown stage {unknown[0]!r}: choose one of {', '.join(STAGES)} or all")
    return [s for s in STAGES if s in stages]


def run_stage(spark: SparkSession, config: PipelineConfig, stage: str, progress: Progress = print) -> dict[str, int]:
    """Run one stage; returns its counts."""
    if stage not in STAGES:
        raise LensError(f"unknown stage {stage!r}: choose one of {', '.join(STAGES)}")
    with lake_lock.locked(config.lake_path, config.lock_wait_s):
        _upgraded(spark, config, progress)
        return _run(spark, config, stage, progress)


def _upgraded(spark: SparkSession, config: PipelineConfig, progress: Progress) -> None:
    """An older lake brought up to today's tables, under the lock its caller holds: renamed
    (``pipelines.migrations``), then recomputed where gold must (``pipelines.gold.upgrade``)."""
    migrations.migrate(spark, config.lake_path, progress)
    gold_upgrade.upgrade(spark, config.lake_path, progress)


def _run(spark: SparkSession, config: PipelineConfig, stage: str, progress: Progress) -> dict[str, int]:
    """One stage, under the lock its caller holds."""
    started = time.monotonic()
    progress(f"[{stage}] starting")
    result = STAGES[stage](spark, config, progress)
    progress(f"[{stage}] done in {time.monotonic() - started:.1f} s: {describe(result)}")
    return result


def run_pipeline(spark: SparkSession, config: PipelineConfig, stages: Sequence[str] = ("all",),
                 progress: Progress = print) -> dict[str, dict[str, int]]:
    """Run the stages in order, holding the lake's lock from the first to the last; returns each
    stage's counts."""
    todo = resolve_stages(stages)
    with lake_lock.locked(config.lake_path, config.lock_wait_s):
        _upgraded(spark, config, progress)
        return {stage: _run(spark, config, stage, progress) for stage in todo}
