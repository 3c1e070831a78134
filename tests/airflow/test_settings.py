"""Where the DAGs' settings come from (Airflow Variables named like the pipeline's environment
variables, then the worker's environment, then the defaults), and the one-line errors a bad
Variable gives. The lookups are plain dicts here; the DAG tests read real Airflow Variables."""
from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from lens_airflow.settings import pipeline_config, report_dir, variable_key
from lens_airflow.tasks import report_day
from lens_runtime.errors import LensError
from pipelines.config import SETTINGS

BROKER = {"lens_kafka_bootstrap": "kafka-1:9092"}


def test_every_pipeline_setting_is_a_variable_named_like_its_environment_variable():
    keys = {variable_key(s): s.field for s in SETTINGS}
    assert {k: keys[k] for k in ("lens_spark_master", "lens_lake", "lens_kafka_bootstrap", "lens_telemetry_topic")} \
        == {"lens_spark_master": "spark_master", "lens_lake": "lake_path", "lens_kafka_bootstrap": "bootstrap_servers",
            "lens_telemetry_topic": "topic"}
    variables = {**BROKER, "lens_spark_master": "spark://spark-master:7077", "lens_lake": "/data/lens",
                 "lens_telemetry_topic": "fleet-telemetry", "lens_max_bad_fraction": "0.2", "lens_episode_gap_s": ""}
    config = pipeline_config(variables.get, environ={})
    assert (config.spark_master, config.lake_path, config.bootstrap_servers, config.topic) == \
        ("spark://spark-master:7077", "/data/lens", "kafka-1:9092", "fleet-telemetry")
    assert config.max_bad_row_fraction == 0.2 and config.episode_gap_s == 10.0  # an empty Variable is unset


def test_the_run_wins_over_variables_which_win_over_the_environment():
    environ = {"LENS_SPARK_MASTER": "yarn", "LENS_LAKE": "/env/lake", "LENS_INGEST_UNTIL_MS": "5"}
    config = pipeline_config({**BROKER, "lens_lake": "/var/lake"}.get, environ=environ, ingest_until_ms=1_000)
    assert (config.spark_master, config.lake_path, config.ingest_until_ms) == ("yarn", "/var/lake", 1_000)
    assert pipeline_config(BROKER.get, environ={}).spark_master == "local[2]"


@pytest.mark.parametrize("key, value, said", [
    ("lens_max_bad_fraction", "lots", "lens_max_bad_fraction='lots' is not a number"),
    ("lens_max_bad_fraction", "2", "lens_max_bad_fraction='2': max_bad_row_fraction=2.0 is outside [0, 1]"),
    ("lens_ingest_until_ms", "-4", "lens_ingest_until_ms='-4': ingest_until_ms=-4 must be epoch milliseconds"),
])
def test_a_bad_variable_is_named_with_its_fix_in_one_line(key, value, said):
    with pytest.raises(LensError) as err:
        pipeline_config({**BROKER, key: value}.get, environ={})
    message = str(err.value)
    assert message.startswith(f"Airflow Variable {said}") and "\n" not in message
    assert message.endswith(f"(set it with `airflow variables set {key} VALUE`)")


def test_a_bad_environment_variable_is_named_as_the_command_line_names_it():
    with pytest.raises(LensError, match=r"^LENS_EPISODE_GAP_S='soon' is not a number"):
        pipeline_config(BROKER.get, environ={"LENS_EPISODE_GAP_S": "soon"})


def test_daily_reports_go_to_a_local_folder():
    config = pipeline_config({**BROKER, "lens_lake": "/data/lens"}.get, environ={})
    assert report_dir(config, {}.get) == "/data/lens/report"
    assert report_dir(config, {"lens_report_dir": "/srv/reports"}.get) == "/srv/reports"
    remote = pipeline_config({**BROKER, "lens_lake": "s3a://bucket/lens"}.get, environ={})
    with pytest.raises(LensError, match="not a local folder: set one with `airflow variables set lens_report_dir"):
        report_dir(remote, {}.get)


def test_a_daily_run_reports_its_partition_day_else_its_logical_day_else_yesterday():
    ran = datetime(2026, 3, 11, 0, 20, tzinfo=timezone.utc)
    assert report_day("2026-03-09", None, ran) == date(2026, 3, 9)
    assert report_day(None, datetime(2026, 3, 8, 23, 0, tzinfo=timezone.utc), ran) == date(2026, 3, 8)
    assert report_day(None, None, ran) == date(2026, 3, 10)
