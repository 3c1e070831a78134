"""
### rebalance-lens, daily

What needs a whole day of hourly runs, once the marts hold all 24 hours of it:

- **report**: the tuning report of the day (`rebalance-lens report --since <day>`), one offline
  HTML page at `<lens_report_dir>/<day>/rebalance-report.html` (default `<lake>/report/<day>/`);
- **maintain**: compaction (`OPTIMIZE`) then `VACUUM` (7 days kept) of every lake table
  (`rebalance-lens pipeline maintain`): each hourly run appends small files;
- **test_marts**: the SQL models' whole test suite over every row (`rebalance-lens sql test`): an
  hourly build checks the marts' rules as Delta constraints on write and runs the tests that need
  a query on the groups it wrote only; this runs every test, the staging and unit tests too.

**Scheduled by data:** a run per day, when `rebalance_lens_marts` has been updated for each of
its 24 hours (UTC) by `rebalance_lens_hourly` (a partition rollup). A day with an hour that never
succeeded waits; trigger it by hand with `--logical-date <day>` to run it anyway. The tasks are
independent: a failed compaction does not hold the report back. One run at a time
(maintenance rewrites every table).

**Settings:** the hourly DAG's Variables (`lens_lake`, `lens_spark_master`, ...) and
`lens_report_dir`.
"""
from __future__ import annotations

from airflow.sdk import DayWindow, PartitionedAssetTimetable, RollupMapper, StartOfDayMapper, dag, task

from lens_airflow.schedule import DAG_ARGS, DAILY_REPORT, LONG_TASK_TIMEOUT, MARTS, TAGS
from lens_airflow.tasks import check_marts, maintain_tables, write_daily_report


@dag(
    dag_id="rebalance_lens_daily",
    schedule=PartitionedAssetTimetable(
        assets=MARTS,
        default_partition_mapper=RollupMapper(upstream_mapper=StartOfDayMapper(timezone="UTC"), window=DayWindow()),
    ),
    tags=[*TAGS, "daily"],
    doc_md=__doc__,
    **DAG_ARGS,
)
def rebalance_lens_daily() -> None:
    task(task_id="report", outlets=[DAILY_REPORT],
         doc_md="`tuning_report.write_report(lake, <dir>/<day>, since=<day>)`")(write_daily_report)()
    task(task_id="maintain", execution_timeout=LONG_TASK_TIMEOUT,
         doc_md="`pipelines.maintenance.maintain(spark, config)`")(maintain_tables)()
    task(task_id="test_marts", execution_timeout=LONG_TASK_TIMEOUT,
         doc_md="`pipelines.sql_build.check(spark, lake)`")(check_marts)()


rebalance_lens_daily()
