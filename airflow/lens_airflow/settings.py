"""Where the DAGs' settings come from: Airflow Variables, then the worker's environment, then the
pipeline's defaults.

Every pipeline setting (``pipelines.config.SETTINGS``) is an Airflow Variable named like its
environment variable in lower case, so docs/running.md's table of settings is also the table of
Variables. The four a deployment sets:

============================  =========================================================
``lens_spark_master``         ``local[2]`` (a laptop); ``spark://HOST:7077``, ``yarn``, ``k8s://...``
``lens_lake``                 ``<REBALANCE_LENS_HOME>/lake``; a cluster needs shared storage
``lens_kafka_bootstrap``      the broker of ``rebalance-lens kafka up``
``lens_telemetry_topic``      ``rebalance-lens-telemetry``
============================  =========================================================

plus ``lens_report_dir`` (where the daily report goes; default ``<lake>/report``). The run's own
values (the ingest bound from its data interval) win over all of them. Read when a task runs,
never when the DAG file is parsed.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from lens_runtime.errors import LensError
from pipelines.config import SETTINGS, PipelineConfig, Setting

Lookup = Callable[[str], "str | None"]  # a Variable's value by key, None when it is not set
REPORT_DIR = "lens_report_dir"


def variable_key(setting: Setting) -> str:
    """The Airflow Variable of a pipeline setting: its environment variable in lower case."""
    return setting.env.lower()


def airflow_variables(key: str) -> str | None:
    """The Airflow Variable ``key`` (through the task's execution API), None when unset."""
    from airflow.sdk import Variable

    return Variable.get(key, default=None)


def pipeline_config(lookup: Lookup = airflow_variables, environ: Mapping[str, str] | None = None,
                    **given: Any) -> PipelineConfig:
    """The pipeline's settings for a task: ``given`` > Variables > ``environ`` > defaults.

    A bad Variable fails in one line naming it and the fix; a bad environment variable of the
    worker, as the command line would name it."""
    environ = os.environ if environ is None else environ
    variables = {s.env: value for s in SETTINGS if (value := lookup(variable_key(s))) not in (None, "")}
    try:
        return PipelineConfig.resolve(environ={**environ, **variables}, **given)
    except LensError:
        for env, value in variables.items():  # which Variable was it?
            _check_variable(env, value)
        raise


def _check_variable(env: str, value: str) -> None:
    """Raise a LensError naming the Variable when ``value`` alone is not a valid setting."""
    key = env.lower()
    try:
        PipelineConfig.resolve(environ={env: value}, bootstrap_servers="checked:9092")
    except LensError as err:
        said = str(err)
        said = said.replace(env, key) if said.startswith(env) else f"{key}={value!r}: {said}"
        raise LensError(f"Airflow Variable {said} (set it with `airflow variables set {key} VALUE`)") from None


def report_dir(config: PipelineConfig, lookup: Lookup = airflow_variables) -> str:
    """Where the daily reports go: Variable ``lens_report_dir``, else ``<lake>/report``."""
    chosen = lookup(REPORT_DIR) or f"{config.lake_path.rstrip('/')}/report"
    if "://" in chosen:
        raise LensError(f"the daily report is written on the worker, and {chosen!r} is not a local folder: set "
                        f"one with `airflow variables set {REPORT_DIR} /path/on/the/worker`")
    return chosen
