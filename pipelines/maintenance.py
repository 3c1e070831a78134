"""Table maintenance: compaction, then vacuum, of every lake table: a daily job, not a stage.

Why it is needed: every incremental run appends a few small files to each table it writes (a
replace writes its scope's rows anew and marks the old ones deleted with deletion vectors
rather than rewriting their files), so after a day of hourly runs a gold table is dozens of
small files and marks, and every read opens them all. The policy:

- ``OPTIMIZE`` each table (Delta's bin-packing: files under 1 GiB are merged, deletion vectors
  applied), once a day: it rewrites only the files that need it, so a compacted table costs a
  look at its log;
- validation's sequence runs (``silver/agent_sequences``) first lose the rows a later one
  supersedes (``pipelines.sequences.prune``): each batch adds a row per agent it brought;
- ``VACUUM`` after it, keeping ``retain_hours`` (default 168: Delta's own seven days), so a
  reader or a rerun from a week-old version still finds its files, and nothing older piles up.

Layout (``pipelines.catalog``): only bronze and silver events are partitioned (by date: the
incremental reads bound them by time); every table is sorted by group (and time) within its
files, so a scoped read skips files by their statistics; Z-ordering is not used (the scoped
reads are by group, which the sort already serves).
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from pyspark.sql import SparkSession

from pipelines import catalog, lake, lake_lock, sequences
from pipelines.config import PipelineConfig, Progress

RETAIN_HOURS = 168
# VACUUM lists a table's folders in a Spark job with one task per this many (Spark's default:
# 10,000 tasks, ~40 s a table on 2 cores even for one file); a table here has a few folders.
LISTING_TASKS = "8"


def maintain(spark: SparkSession, config: PipelineConfig, retain_hours: int = RETAIN_HOURS,
             progress: Progress = print, tables: Sequence[catalog.Table] = ()) -> dict[str, int]:
    """Compact then vacuum the lake's ``tables`` (default: every one); per table its files after.
    Holds the lake's lock (``pipelines.lake_lock``): no stage writes while files are rewritten."""
    with lake_lock.locked(config.lake_path, config.lock_wait_s):
        return _maintain(spark, config, retain_hours, progress, tables)


def _maintain(spark: SparkSession, config: PipelineConfig, retain_hours: int, progress: Progress,
              tables: Sequence[catalog.Table]) -> dict[str, int]:
    from delta.tables import DeltaTable

    out = {}
    listing = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
    spark.conf.set(listing, LISTING_TASKS)
    progress(f"{catalog.SEQUENCES.path}: {sequences.prune(spark, config.lake_path):,} superseded rows deleted")
    for table in tables or (*catalog.TABLES, *catalog.CLOSED_LOOP_TABLES, *catalog.BROKER_TABLES):
        if not lake.exists(spark, config.lake_path, table):
            continue
        delta = DeltaTable.forPath(spark, table.location(config.lake_path))
        started, before = time.monotonic(), delta.detail().first()["numFiles"]
        delta.optimize().executeCompaction()
        delta.vacuum(retain_hours)
        out[table.path] = delta.detail().first()["numFiles"]
        progress(f"{table.path}: {before:,} files -> {out[table.path]:,} in {time.monotonic() - started:.1f} s")
    spark.conf.unset(listing)
    return out
