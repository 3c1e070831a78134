"""Airflow for the tests: a metadata database of their own (SQLite in a temporary AIRFLOW_HOME,
migrated once a session), this checkout's DAG folder, no example DAGs.

Set when this file is imported: Airflow reads its configuration the first time it is imported,
and the tests must never touch a developer's ~/airflow.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "airflow" / "dags"
AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="lens-airflow-"))
atexit.register(shutil.rmtree, AIRFLOW_HOME, ignore_errors=True)
os.environ.update({
    "AIRFLOW_HOME": str(AIRFLOW_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
})


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The session's metadata database, migrated (what `dag.test()` needs); AIRFLOW_HOME."""
    airflow = Path(sys.executable).with_name("airflow")
    done = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return AIRFLOW_HOME


@pytest.fixture(scope="session")
def dagbag():
    """This checkout's DAG folder, parsed as the DAG processor parses a bundle."""
    from airflow.dag_processing.dagbag import BundleDagBag

    return BundleDagBag(dag_folder=str(DAGS), bundle_path=str(DAGS), bundle_name="dags-folder")
