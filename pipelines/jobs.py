"""The stage runner: each stage is a function of (spark, config), run in order.

``run_pipeline(spark, config, stages=("all",))`` is the entry point for the CLI, the
tests and the scenario runner. Each stage reads and writes Delta tables only, records
its progress after its writes, and can be killed and rerun at any point.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import lake
from pipelines.config import PipelineConfig
from pipelines.episodes import CLUSTER_KINDS, EPISODE_FIELDS, gold_of_group
from pipelines.errors import LensError
from pipelines.group_apply import apply_per_group
from pipelines.handoffs import HANDOFF_FIELDS
from pipelines.ingest import run_ingest
from pipelines.metrics import group_metrics
from pipelines.silver import ENVELOPE_FOR_LOGIC, changed_groups, events_of, run_silver
from pipelines.validation import run_validate

STAGES = ("ingest", "validate", "silver", "gold")
GOLD_HANDOFF_FIELDS = [*HANDOFF_FIELDS, ("episode_id", "string"), ("episode_start_ms", "bigint"),
                       ("cause", "string")]


def _struct(fields: list[tuple[str, str]]) -> str:
    return "struct<" + ", ".join(f"{n}: {k}" for n, k in fields) + ">"


# Both outputs of one gold_of_group call, one handoff or one episode per row (the other
# is null), split in Spark: rows of bounded size, where one row per group with two
# arrays grows with the group's history.
GOLD_ROW_DDL = f"handoff {_struct(GOLD_HANDOFF_FIELDS)}, episode {_struct(EPISODE_FIELDS)}"


def run_gold(spark: SparkSession, config: PipelineConfig, since_ms: int | None = None,
             progress: Callable[[str], Any] = print) -> dict[str, int]:
    """Handoffs, episodes and metrics for the groups silver changed since gold last ran."""
    silver_mark = lake.stage_mark(spark, config.lake_path, "silver")
    last = lake.stage_mark(spark, config.lake_path, "gold")
    if silver_mark < 0:
        progress("gold: silver has not run yet; nothing to do")
        return {"groups": 0}
    groups = changed_groups(spark, config, last, silver_mark, since_ms)
    if not groups:
        progress("gold: no new events; nothing to do")
        return {"groups": 0}
    progress(f"gold: recomputing {len(groups)} group(s)")
    gap = config.episode_gap_s
    intervals = lake.rows_of(spark, lake.table_path(config.lake_path, lake.OWNERSHIP), "group_id", groups)
    events = events_of(spark, config, groups, silver_mark)  # not cached: the two readers need few, different columns
    rebalance_events = events.where(F.col("kind").isin(sorted(CLUSTER_KINDS))).select(*ENVELOPE_FOR_LOGIC)
    tagged = intervals.select("group_id", F.struct(*intervals.columns).alias("interval")).unionByName(
        rebalance_events.select("group_id", F.struct(*ENVELOPE_FOR_LOGIC).alias("event")),
        allowMissingColumns=True)

    def gold(group: list[dict]) -> list[dict]:
        handoffs, episodes = gold_of_group([r["interval"] for r in group if r["interval"] is not None],
                                           [r["event"] for r in group if r["event"] is not None], gap)
        return ([{"handoff": h, "episode": None} for h in handoffs]
                + [{"handoff": None, "episode": e} for e in episodes])

    # Spilled (written once, read back) so the Python pass runs once for both outputs.
    with lake.spilled(spark, apply_per_group(tagged, "group_id", gold, GOLD_ROW_DDL),
                      f"{config.checkpoint_path}/gold_rows") as rows:
        handoffs = rows.where(F.col("handoff").isNotNull()).select("handoff.*")
        episodes = rows.where(F.col("episode").isNotNull()).select("episode.*")
        lake.replace_scope(spark, lake.table_path(config.lake_path, lake.HANDOFFS), handoffs, ["handoff_id"],
                           "group_id", groups)
        lake.replace_scope(spark, lake.table_path(config.lake_path, lake.EPISODES), episodes, ["episode_id"],
                           "group_id", groups)
        lake.replace_scope(spark, lake.table_path(config.lake_path, lake.METRICS),
                           group_metrics(handoffs, episodes, events),
                           ["group_id", "grain", "period_start", "cause"], "group_id", groups)
        counts = {"handoffs": handoffs.count(), "episodes": episodes.count()}
    lake.set_stage_mark(spark, config.lake_path, "gold", silver_mark)
    return {"groups": len(groups), **counts}


def _stage_runners(since_ms: int | None, progress: Callable[[str], Any]):
    return {
        "ingest": lambda spark, config: run_ingest(spark, config, since_ms=since_ms),
        "validate": lambda spark, config: run_validate(spark, config, progress=progress),
        "silver": lambda spark, config: run_silver(spark, config, since_ms=since_ms, progress=progress),
        "gold": lambda spark, config: run_gold(spark, config, since_ms=since_ms, progress=progress),
    }


def resolve_stages(stages: Sequence[str]) -> list[str]:
    if not stages or "all" in stages:
        return list(STAGES)
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise LensError(f"unknown stage {unknown[0]!r}: choose one of {', '.join(STAGES)} or all")
    return [s for s in STAGES if s in stages]


def run_pipeline(spark: SparkSession, config: PipelineConfig, stages: Sequence[str] = ("all",),
                 since_ms: int | None = None, progress: Callable[[str], Any] = print) -> dict[str, dict]:
    """Run the stages in order; returns each stage's counts."""
    runners = _stage_runners(since_ms, progress)
    results = {}
    for stage in resolve_stages(stages):
        started = time.monotonic()
        progress(f"[{stage}] starting")
        results[stage] = runners[stage](spark, config)
        progress(f"[{stage}] done in {time.monotonic() - started:.1f} s: {results[stage]}")
    return results
