"""
### rebalance-lens, hourly

Each hour's telemetry through the pipeline, one task per stage, so a failed stage retries alone:
**ingest** (the telemetry topic to `bronze/telemetry_raw`), **broker** (each group's history from
`__consumer_offsets`, when the broker source is on), **validate**, **silver**, **gold**,
**recommend**, then **sql** (the dbt models built and tested: the marts).

**Keyed by the data interval.** A run for `[h, h+1)` ingests, per partition, the records from
where the lake stopped up to the first one stamped at or after `h+1` (Kafka timestamps); the
later stages process what is new in the lake. So rerunning or backfilling an hour gives the
same tables, and backfilling h1 then h2 gives the tables one run through h2 gives. A record
that arrives after its hour's run lands with the next run. One run at a time (they write the
same tables); a run that failed for good leaves its records to the next one.

**Settings** (Airflow Variables, read when a task runs): `lens_spark_master` (default
`local[2]`), `lens_lake`, `lens_kafka_bootstrap`, `lens_telemetry_topic`, and any other pipeline
setting by its environment variable in lower case (docs/running.md, "Running on Airflow").

**Outlet:** `rebalance_lens_marts`, partitioned by hour; `rebalance_lens_daily` runs once a
day's 24 hours are built.
"""
from __future__ import annotations

from airflow.sdk import CronDataIntervalTimetable, chain, dag, task

from lens_airflow.schedule import DAG_ARGS, DEFAULT_ARGS, LONG_TASK_TIMEOUT, MARTS, TAGS
from lens_airflow.tasks import run_hourly_stage

STAGES = ("ingest", "broker", "validate", "silver", "gold", "recommend", "sql")  # pipelines.stages.STAGES, in order


@dag(
    dag_id="rebalance_lens_hourly",
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    tags=[*TAGS, "hourly"],
    doc_md=__doc__,
    **DAG_ARGS,
)
def rebalance_lens_hourly() -> None:
    runs = []
    for stage in STAGES:
        is_sql = stage == "sql"
        step = task(task_id=stage, outlets=[MARTS] if is_sql else [],
                    execution_timeout=LONG_TASK_TIMEOUT if is_sql else DEFAULT_ARGS["execution_timeout"],
                    doc_md=f"`pipelines.stages.run_stage(spark, config, {stage!r})`")(run_hourly_stage)
        runs.append(step(stage))
    chain(*runs)


rebalance_lens_hourly()
