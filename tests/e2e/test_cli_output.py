"""The command line reads cleanly: real commands in a child process, their whole output read.

Default suite: `pipeline run ingest` on the scenarios' lake and topic (nothing new to land, so
it costs a JVM start). Slow suite: the demo itself, one run with the agent (a crash) and one without
(seen from the broker's log), on the session's broker.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# What leaked before: the JVM's start-up note, Spark's streaming note (twice a run), dbt-spark's
# "existing session" (once per statement), setuptools' editable-install block, Python dicts.
LEAKS = ("WARNING: Using incubator modules", "WARN ResolveWriteToStream", "Using an existing Spark session",
         "BuildBackendWarning", "{'")


def _cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lens_cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "80"})


def _clean(result: subprocess.CompletedProcess) -> str:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for leak in LEAKS:
        assert leak not in output, leak
    return output


def _spark_log(output: str) -> Path:
    """The log the command named: the JVM's console went there, not to the terminal."""
    found = re.search(r"Spark's log: (\S+)", output)
    assert found, output
    log = Path(found[1])
    assert "Using incubator modules" in log.read_text(errors="replace")
    return log


def test_pipeline_run_shows_stage_names_and_sends_the_jvm_to_its_log(landed, kafka):
    config = landed["config"]
    result = _cli("pipeline", "run", "ingest", "--bootstrap", kafka.bootstrap_servers, "--topic", config.topic,
                  "--lake", config.lake_path, timeout=180)
    output = _clean(result)
    assert "[ingest] starting" in output and re.search(r"\[ingest\] done in [\d.]+ s: rows 0\b", output), output
    _spark_log(output)


@pytest.mark.slow
def test_the_demo_reads_cleanly(kafka, tmp_path):
    result = _cli("demo", "--run", "crash/cooperative-sticky/batch", "--plain-run", "rolling-restart/consumer/batch",
                  "--bootstrap", kafka.bootstrap_servers, "--lake", str(tmp_path / "lake"), timeout=1200)
    output = _clean(result)
    for stage in ("ingest", "broker", "validate", "silver", "gold", "recommend", "sql"):
        assert f"[{stage}] starting" in output and f"[{stage}] done in" in output, stage
    assert "What the runs showed" in output and "known only as a range" in output
    assert "(bounds, agent)" in output and "(bounds, broker log)" in output  # the crash; the group without the agent
    said = " ".join(output.split())  # the findings wrap at 80 columns
    assert "A group without the agent (rolling-restart / consumer / batch / no agent" in said
    report = re.search(r"Report: (\S+)", output)
    assert report and Path(report[1]).stat().st_size > 0
    # what the demo lays out (tables, recommendations, findings) fits 80 columns; log lines and paths run on
    laid_out = result.stdout[result.stdout.index("Per run"):result.stdout.index("Report:")]
    assert max(len(line) for line in laid_out.splitlines() if "/" not in line) <= 80, laid_out
    _spark_log(output)
