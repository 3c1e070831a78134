"""The DAGs on a real Airflow (slow suite): ``airflow standalone`` on SQLite in a temporary
AIRFLOW_HOME, driven as an operator drives it.

1. Settings as Airflow Variables (``airflow variables import``), Airflow started, both DAGs
   unpaused and the hourly DAG triggered through the REST API for 2026-01-01 01:00-02:00 (the
   fleet's second hour). Unpausing also makes Airflow schedule the last complete hour by itself:
   one of the two runs lands the fleet's records, the other nothing, and both succeed, each
   task in a worker process of its own, with its own Spark.
2. The lake has the fleet's gold, recommendations and marts.
3. The marts' other 23 hours of 2026-01-01 marked updated through the REST API, as 23 more
   hourly runs would: the daily DAG's rollup starts a run for the day, which writes the day's
   report and compacts the lake.
4. Every process Airflow started is gone after the stop: SIGINT to its process group, SIGTERM to
   what is left a minute later, SIGKILL to what is left 30 s after that.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lens_airflow.schedule import MARTS, PARTITION_KEY_FORMAT
from lens_scenarios.synthetic import BASE_TIME_MS, long_lived_telemetry
from pipelines import catalog, lake
from pipelines.sql_build import marts_path

DAY = datetime.fromtimestamp(BASE_TIME_MS / 1000, timezone.utc)
HOURLY, DAILY = "rebalance_lens_hourly", "rebalance_lens_daily"
RUN_TIMEOUT_S = 1500  # a run's six tasks each start a Spark driver: ~8 min on 2 cores


def _finished(airflow, dag_id: str, run_id: str) -> dict | None:
    run = airflow.api("GET", f"dags/{dag_id}/dagRuns/{run_id}")
    if run["state"] == "failed":
        tasks = airflow.api("GET", f"dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        states = {t["task_id"]: t["state"] for t in tasks}
        raise AssertionError(f"{dag_id} run {run_id} failed: {states}\n{airflow.tail()}")
    return run if run["state"] == "success" else None


def _runs(airflow, dag_id: str) -> list[dict]:
    return airflow.api("GET", f"dags/{dag_id}/dagRuns?limit=50")["dag_runs"]


@pytest.mark.slow
@pytest.mark.timeout(4800)
def test_operator_runs_the_hourly_dag_and_a_full_day_starts_the_daily_one(spark, kafka, tmp_path, unique,
                                                                          standalone_airflow):
    topic = kafka.create_topic(f"airflow-real-{unique}", partitions=3, config={"retention.ms": "-1"})
    records = list(long_lived_telemetry(groups=2, members=3, partitions=6, hours=2, tick_s=300, restart_every_h=1))
    kafka.feed(topic, records)
    lake_path = str(tmp_path / "lake")
    airflow = standalone_airflow
    variables = tmp_path / "variables.json"
    variables.write_text(json.dumps({"lens_lake": lake_path, "lens_kafka_bootstrap": kafka.bootstrap_servers,
                                     "lens_telemetry_topic": topic, "lens_spark_master": "local[2]"}))
    try:
        airflow.cli("db", "migrate")
        airflow.cli("variables", "import", str(variables))
        airflow.start()
        airflow.wait_for("the DAGs parsed", lambda: {d["dag_id"] for d in airflow.api("GET", "dags")["dags"]}
                         >= {HOURLY, DAILY}, timeout_s=180)

        interval_end = DAY + timedelta(hours=2)
        triggered = airflow.api("POST", f"dags/{HOURLY}/dagRuns", {"logical_date": interval_end.isoformat()})
        assert triggered["data_interval_end"].startswith("2026-01-01T02:00:00"), triggered
        for dag_id in (HOURLY, DAILY):
            airflow.api("PATCH", f"dags/{dag_id}", {"is_paused": False})
        airflow.wait_for("the triggered hourly run", lambda: _finished(airflow, HOURLY, triggered["dag_run_id"]),
                         timeout_s=RUN_TIMEOUT_S)
        scheduled = airflow.wait_for("Airflow's own run", lambda: [r for r in _runs(airflow, HOURLY)
                                                                   if r["run_type"] == "scheduled"], timeout_s=120)
        airflow.wait_for("Airflow's own run", lambda: _finished(airflow, HOURLY, scheduled[0]["dag_run_id"]),
                         timeout_s=RUN_TIMEOUT_S)

        assert lake.read(spark, lake_path, catalog.BRONZE).count() == len(records)
        assert {r.group_id for r in lake.read(spark, lake_path, catalog.RECOMMENDATIONS).collect()} == \
            {"long-0", "long-1"}
        assert lake.read(spark, lake_path, catalog.HANDOFFS).count() > 0
        assert (Path(marts_path(lake_path)) / "group_hourly_costs" / "_delta_log").is_dir()

        marts = airflow.api("GET", f"assets?name_pattern={MARTS.name}")["assets"]
        assert len(marts) == 1, marts
        built = {e["partition_key"] for e in airflow.api("GET", f"assets/events?asset_id={marts[0]['id']}")
                 ["asset_events"]}
        assert f"{DAY + timedelta(hours=1):{PARTITION_KEY_FORMAT}}" in built, built
        for hour in range(24):
            key = f"{DAY + timedelta(hours=hour):{PARTITION_KEY_FORMAT}}"
            if key not in built:
                airflow.api("POST", "assets/events", {"asset_id": marts[0]["id"], "partition_key": key})
        daily = airflow.wait_for("the daily run of 2026-01-01", lambda: [
            r for r in _runs(airflow, DAILY) if r.get("partition_key") == DAY.date().isoformat()], timeout_s=180)
        assert len(daily) == 1
        airflow.wait_for("the daily run", lambda: _finished(airflow, DAILY, daily[0]["dag_run_id"]),
                         timeout_s=RUN_TIMEOUT_S)
        report = Path(lake_path) / "report" / DAY.date().isoformat() / "rebalance-report.html"
        assert report.is_file() and "long-0" in report.read_text()
    finally:
        left = airflow.stop()
    assert left == [], f"still running after SIGINT, SIGTERM and SIGKILL: {left}"
