"""The DAG files as Airflow parses them: they import (without Spark), have no cycle, and every
DAG and task has its schedule, owner, docs, retries with backoff and timeout; the hourly DAG has
one task per pipeline stage in the stages' order, and the daily one waits for the marts the
hourly one updates."""
from __future__ import annotations

import subprocess
import sys

from airflow.serialization.encoders import coerce_to_core_timetable

from lens_airflow.schedule import MARTS, OWNER

DAG_IDS = {"rebalance_lens_hourly", "rebalance_lens_daily"}


def test_every_dag_file_imports_without_errors(dagbag, dags_folder):
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == DAG_IDS
    assert {dag.fileloc for dag in dagbag.dags.values()} == {str(p) for p in dags_folder.glob("*.py")}


def test_parsing_the_dags_starts_no_spark(dags_folder):
    """The DAG processor imports the files every few seconds: Spark and the pipeline load in tasks."""
    probe = ("import sys; from airflow.dag_processing.dagbag import DagBag; "
             f"bag = DagBag(dag_folder={str(dags_folder)!r}); assert not bag.import_errors, bag.import_errors; "
             "print(sorted(m for m in ('pyspark', 'delta', 'pipelines.stages', 'polars') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_dags_are_scheduled_one_run_at_a_time_documented_and_owned(dagbag):
    for dag in dagbag.dags.values():
        dag.check_cycle()
        assert dag.max_active_runs == 1 and dag.catchup is False, dag.dag_id
        assert dag.doc_md and len(dag.doc_md) > 200, dag.dag_id
        assert "rebalance-lens" in dag.tags and dag.owner == OWNER, dag.dag_id
        for task in dag.tasks:
            assert task.owner == OWNER and task.doc_md, task.task_id
            assert task.retries >= 1 and task.retry_exponential_backoff > 1, task.task_id
            assert task.max_retry_delay and task.execution_timeout, task.task_id


def test_hourly_dag_runs_each_stage_in_order_and_updates_the_marts(dagbag):
    from pipelines.stages import STAGES

    dag = dagbag.dags["rebalance_lens_hourly"]
    timetable = coerce_to_core_timetable(dag.timetable)
    assert type(timetable).__name__ == "CronDataIntervalTimetable" and timetable.summary == "0 * * * *"
    order = [t.task_id for t in dag.topological_sort()]
    assert order == list(STAGES)
    for before, after in zip(order, order[1:]):
        assert dag.task_dict[before].downstream_task_ids == {after}
    assert [o.name for t in dag.tasks for o in t.outlets] == [MARTS.name]
    assert dag.task_dict["sql"].outlets == [MARTS]


def test_daily_dag_waits_for_a_days_hourly_marts(dagbag):
    dag = dagbag.dags["rebalance_lens_daily"]
    timetable = coerce_to_core_timetable(dag.timetable)
    assert timetable.partitioned and [a.name for a, _ in timetable.asset_condition.iter_assets()] == [MARTS.name]
    mapper = timetable.default_partition_mapper
    assert mapper.is_rollup
    hours = sorted(mapper.to_upstream("2026-03-10"))
    assert len(hours) == 24 and hours[0] == "2026-03-10T00:00:00" and hours[-1] == "2026-03-10T23:00:00"
    assert mapper.to_downstream("2026-03-10T17:00:00") == "2026-03-10"
    assert {t.task_id for t in dag.tasks} == {"report", "maintain", "test_marts"}
