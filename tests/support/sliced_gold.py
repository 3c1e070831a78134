"""Gold from many small incremental runs, to compare with gold from one run over the same events.

The source lake's validated events are written to a new lake as ``slices`` validation batches,
each group's by its own event times, a share of each slice of every other group held back one
or two batches (out of order, and late: those groups are refolded), and the gold stage runs after each batch lands
(its summary marks it passed, as validation would). The other groups get their events in
order, so their runs continue from the fold state: both paths are checked in one lake.
"""
from __future__ import annotations

import bisect
import dataclasses
import random
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import PipelineConfig
from pipelines.stages import run_stage
from pipelines.validate import SUMMARY_DDL
from tests.support.reference_ownership import ownership_intervals as reference_intervals

GOLD_TABLES = (catalog.OWNERSHIP, catalog.HANDOFFS, catalog.EPISODES, catalog.MEMBERS, catalog.PROCESSED,
               catalog.METRICS)


ENVELOPE_WITH_BODY = ["event_id", "kind", "event_time_ms", "agent_id", "seq", *catalog.GROUP_KEY, "member_id",
                      "group_instance_id", "client_id", "host", "generation", "body"]


def _text(row: tuple) -> tuple:
    """A row as text (numbers to 9 digits: sums of the same terms in another order differ in the last bits)."""
    return tuple(f"{v:.9g}" if isinstance(v, float) else str(v) for v in row)


def gold_rows(spark: SparkSession, config: PipelineConfig, table: catalog.Table) -> list[tuple]:
    """The table's rows, as sorted tuples of text (columns in name order)."""
    df = lake.read(spark, config.lake_path, table)
    return sorted(_text(tuple(r)) for r in df.select(*sorted(df.columns)).collect())


def sliced_gold(spark: SparkSession, source: PipelineConfig, target: PipelineConfig, slices: int, held_back: float,
                rng: random.Random) -> dict[str, int]:
    """Gold of ``target`` built slice by slice from ``source``'s events; how many groups the runs
    folded from their state, how many from all their events, how many were written from a horizon and
    how many of those read from it (``pipelines.gold.pass_window``)."""
    events = lake.read(spark, source.lake_path, catalog.EVENTS)
    timed: dict[str, list[tuple[int, str]]] = {}
    for r in events.select("group_id", "event_time_ms", "event_id").collect():
        timed.setdefault(r.group_id, []).append((r.event_time_ms, r.event_id))
    batch_of = {}
    for i, group in enumerate(sorted(timed)):
        ordered = sorted(timed[group])  # each group cut by its own times, so each spans every slice
        cuts = [ordered[len(ordered) * k // slices][0] for k in range(1, slices)]
        for t, event_id in ordered:
            delay = rng.choice((1, 2)) if i % 2 == 0 and rng.random() < held_back else 0
            batch_of[event_id] = min(slices - 1, bisect.bisect_right(cuts, t) + delay)
    batches = spark.createDataFrame(sorted(batch_of.items()), "event_id string, batch bigint")
    sliced = events.drop("validate_batch").join(F.broadcast(batches), "event_id").withColumnRenamed(
        "batch", "validate_batch").select(*events.columns)
    lake.replace_where(spark, target.lake_path, catalog.EVENTS, sliced, "true")
    counts = {"from_state": 0, "refolded": 0, "from_horizon": 0, "from_window": 0}
    for batch in range(slices):
        summary = {"validate_batch": batch, "rows": 0, "quarantined": 0, "valid": 0, "duplicates": 0,
                   "new_events": 0, "sequence_gaps": 0, "missing_events": 0, "rule_failures": {}, "passed": True,
                   "max_bad_row_fraction": target.max_bad_row_fraction}
        row = spark.createDataFrame([summary], SUMMARY_DDL).withColumn("validated_at", F.current_timestamp())
        lake.replace_where(spark, target.lake_path, catalog.VALIDATION_SUMMARY, row, f"validate_batch = {batch}")
        result = run_stage(spark, target, "gold", progress=lambda _m: None)
        for key in counts:
            counts[key] += result.get(key, 0)
    return counts


def assert_sliced_gold_equals(spark: SparkSession, source: PipelineConfig, where: Path, slices: int,
                              horizons: bool = False) -> None:
    """Gold of ``source``'s events fed in ``slices`` runs (5% of each slice of every other group
    held back one or two slices: out of order, and later than the 2 s of lateness gold folds again) equals its gold
    from one run, table by table; some runs continued from the fold state, some refolded, and with ``horizons``
    some groups were written from their horizon on, their pass reading from it (``pipelines.gold.horizon``: a group
    needs rebalances more than the episode gap apart over many times the restart window, which the built-in
    scenarios are too short for)."""
    config = dataclasses.replace(source, lake_path=str(where / "sliced-lake"), gold_lateness_s=2.0)
    runs = sliced_gold(spark, source, config, slices=slices, held_back=0.05, rng=random.Random(7))
    for table in GOLD_TABLES:
        assert gold_rows(spark, config, table) == gold_rows(spark, source, table), table.path
    assert runs["from_state"] > 0 and runs["refolded"] > 0 and (runs["from_window"] > 0 or not horizons), runs


def assert_gold_intervals_equal_reference(spark: SparkSession, config: PipelineConfig) -> None:
    """Gold's ownership intervals (the fold over Spark's runs of facts) equal the per-event
    reference's over the lake's events, column by column."""
    events = lake.read(spark, config.lake_path, catalog.EVENTS).select(*ENVELOPE_WITH_BODY).collect()
    by_group: dict[tuple[str, str], list[dict]] = {}
    for r in events:
        by_group.setdefault((r.cluster_id, r.group_id), []).append(r.asDict())
    columns = catalog.OWNERSHIP.column_names()
    want = sorted(_text(tuple(row[c] for c in columns))
                  for group in by_group.values() for row in reference_intervals(group))
    got = sorted(_text(tuple(r))
                 for r in lake.read(spark, config.lake_path, catalog.OWNERSHIP).select(*columns).collect())
    assert got == want

