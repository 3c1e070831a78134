"""The DAGs' task bodies: each resolves its settings (``settings``), takes this process's Spark
session (``lens_runtime.spark_session.build_spark``) and calls the public function a user's
command calls: ``pipelines.stages.run_stage`` (``rebalance-lens pipeline run STAGE``),
``pipelines.maintenance.maintain`` (``pipeline maintain``), ``pipelines.sql_build.check``
(``sql test``), ``tuning_report.write_report`` (``report``). No pipeline logic here.

Keyed by the run: an hourly stage passes its data interval's end to ingest, which lands the
records stamped before it (``ingest_until_ms``; see ``pipelines.ingest``), and the stages after
it process what is new in the lake, so rerunning or backfilling an hour gives the same tables.
The project's imports are inside the functions: the DAG processor imports this module each time
it parses the DAG files, and Spark has no business there.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lens_airflow.schedule import PARTITION_KEY_FORMAT
from lens_airflow.settings import pipeline_config, report_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.config import PipelineConfig

log = logging.getLogger(__name__)


@contextmanager
def spark_session(config: PipelineConfig, app: str) -> Iterator[SparkSession]:
    """The session of this task's process, stopped at the end if the task started it (a worker
    runs each task in a process of its own; ``dag.test()`` runs them in its caller's, whose
    session they share). Its warehouse is the lake's, as a command's is: the SQL build clears
    what an earlier process left there (``pipelines.sql_build.register_sources``)."""
    from pyspark import SparkContext

    from lens_runtime.spark_session import build_spark

    started_here = SparkContext._active_spark_context is None
    spark = build_spark(config.spark_settings(app))
    try:
        yield spark
    finally:
        if started_here:
            spark.stop()


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def run_hourly_stage(stage: str, data_interval_start: datetime | None = None,
                     data_interval_end: datetime | None = None, outlet_events: Any = None,
                     task: Any = None) -> dict[str, int]:
    """One pipeline stage for the run's hour; its counts. The task's outlets (the sql task's
    marts) are marked updated for this hour, the partition the daily DAG counts."""
    from pipelines.stages import run_stage

    config = pipeline_config(ingest_until_ms=epoch_ms(data_interval_end))
    with spark_session(config, f"rebalance-lens-{stage}") as spark:
        counts = run_stage(spark, config, stage, progress=log.info)
    for asset in task.outlets:
        outlet_events[asset].add_partitions(data_interval_start.strftime(PARTITION_KEY_FORMAT))
    return counts


def maintain_tables() -> dict[str, int]:
    """Compact then vacuum every lake table (``pipeline maintain``); per table its files after."""
    from pipelines.maintenance import maintain

    config = pipeline_config()
    with spark_session(config, "rebalance-lens-maintain") as spark:
        return maintain(spark, config, progress=log.info)


def check_marts() -> dict[str, int]:
    """The SQL models' whole test suite over every row (``sql test``), under the lake's lock (it
    reads the marts as one build left them); its counts. Raises, naming what failed."""
    from pipelines.lake_lock import locked
    from pipelines.sql_build import check

    config = pipeline_config()
    with locked(config.lake_path, config.lock_wait_s), spark_session(config, "rebalance-lens-sql-test") as spark:
        return check(spark, config.lake_path, progress=log.info)


def report_day(partition_key: str | None, logical_date: datetime | None, run_after: datetime) -> date:
    """The day a daily run reports: its partition key (the day whose 24 hourly builds of the
    marts it waited for); triggered by hand, the day of its logical date, or without one the
    day before it ran (the last whole day)."""
    if partition_key:
        return date.fromisoformat(partition_key)
    if logical_date is not None:
        return logical_date.astimezone(timezone.utc).date()
    return (run_after.astimezone(timezone.utc) - timedelta(days=1)).date()


def write_daily_report(partition_key: str | None = None, dag_run: Any = None) -> str:
    """The tuning report of the run's day (what the marts hold from its midnight, UTC) in
    ``<report dir>/<day>/rebalance-report.html``; its path. A rerun rewrites the same file."""
    from tuning_report import write_report

    day = report_day(partition_key, dag_run.logical_date, dag_run.run_after)
    config = pipeline_config()
    since = datetime.combine(day, time(), tzinfo=timezone.utc)
    out = Path(report_dir(config)) / day.isoformat()
    return str(write_report(config.lake_path, out, since=since, progress=log.info))
