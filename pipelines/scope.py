"""What an incremental stage recomputes: the groups with events validated since the stage last
ran, and those groups' validated events.

Silver and gold replace the rows of the changed groups (``lake.replace_scope``), computed
from the new events and what they kept (silver its member states, gold its fold state:
neither rereads a group's history), so a rerun with no new events writes nothing. Readers
stop at the last validation batch that passed (``lake.validated_through``): later batches
may be in flight.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import PipelineConfig, Progress


Group = tuple[str, str]  # (cluster_id, group_id): catalog.GROUP_KEY
GROUP_DDL = "cluster_id string, group_id string"  # its columns, for the small frames of groups stages build


def changed_groups(spark: SparkSession, config: PipelineConfig, after_batch: int, upto_batch: int) -> list[Group]:
    """Groups (``catalog.GROUP_KEY``) with events validated in (after_batch, upto_batch], or with events
    since ``config.since_ms``.

    A list, not a DataFrame: the reads and writes downstream take it as a literal list,
    which Delta skips files by (a join skips none). No batch in the range and no ``since_ms``:
    none, without a scan of events (a quiet run's silver, gold and recommend cost their checks)."""
    if after_batch >= upto_batch and config.since_ms is None:
        return []
    events = lake.read(spark, config.lake_path, catalog.EVENTS)
    cond = (F.col("validate_batch") > after_batch) & (F.col("validate_batch") <= upto_batch)
    if config.since_ms is not None:
        cond = cond | (F.col("event_time_ms") >= config.since_ms)
    return sorted(tuple(r) for r in events.where(cond).select(*catalog.GROUP_KEY).distinct().collect())


def events_of(spark: SparkSession, config: PipelineConfig, groups: list[Group], upto_batch: int) -> DataFrame:
    """The groups' events of validation batches up to ``upto_batch`` (later ones may be in flight)."""
    return (lake.rows_of(spark, config.lake_path, catalog.EVENTS, catalog.GROUP_KEY, groups)
            .where(F.col("validate_batch") <= upto_batch))


def with_new_events(spark: SparkSession, config: PipelineConfig, stage: str) -> tuple[int, list[Group]]:
    """(the last passed validation batch, -1 for none yet; the groups with events validated since
    ``stage`` last ran, up to it)."""
    high = lake.validated_through(spark, config.lake_path)
    if high < 0:
        return high, []
    return high, changed_groups(spark, config, lake.stage_mark(spark, config.lake_path, stage), high)


def pending(spark: SparkSession, config: PipelineConfig, stage: str,
            progress: Progress) -> tuple[int, list[Group]] | None:
    """(the last passed validation batch, the groups ``stage`` must recompute up to it), or
    None when there is nothing to do (said through ``progress``)."""
    high, groups = with_new_events(spark, config, stage)
    if high < 0:
        progress(f"{stage}: no events yet (run validate first); nothing to do")
        return None
    if not groups:
        progress(f"{stage}: no new events; nothing to do")
        return None
    progress(f"{stage}: recomputing {len(groups)} group(s) with new events")
    return high, groups
