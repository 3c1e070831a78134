"""One writer per lake (pipelines/lake_lock.py): a second run on a lake in use stops at once with
one line naming the holder, or waits for it with --lock-wait; a holder killed with SIGKILL
leaves no stale lock. Real processes, no Spark (the lock is taken before anything starts).

Two whole pipeline runs started at once on one lake, tables checked against one run:
tests/hardening/test_concurrent_runs.py (slow).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lens_runtime.errors import LensError
from pipelines.config import PipelineConfig
from pipelines.lake_lock import locked
from pipelines.stages import run_stage

REPO = Path(__file__).resolve().parents[2]
HOLD = ("import sys, time\nfrom pipelines.lake_lock import locked\n"
        "with locked(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(float(sys.argv[2]))\n")


@contextmanager
def held_elsewhere(lake: Path, seconds: float) -> Iterator[subprocess.Popen]:
    """Another process holding the lake's lock for ``seconds``."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lake), str(seconds)], cwd=REPO, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def test_a_second_run_stops_at_once_naming_the_holder(tmp_path):
    config = PipelineConfig(lake_path=str(tmp_path / "lake"), bootstrap_servers="unused:1")
    with held_elsewhere(tmp_path / "lake", 60) as holder:
        started = time.monotonic()
        with pytest.raises(LensError) as err:
            run_stage(None, config, "gold")  # the lock comes first: no Spark is needed to be refused
        message = str(err.value)
        assert time.monotonic() - started < 2
        assert "\n" not in message and f"pid {holder.pid}" in message and "--lock-wait" in message, message


def test_a_second_run_with_lock_wait_queues_behind_the_first(tmp_path):
    with held_elsewhere(tmp_path / "lake", 2):
        started = time.monotonic()
        with locked(str(tmp_path / "lake"), wait_s=30):
            waited = time.monotonic() - started
    assert 0.5 < waited < 15, waited


def test_a_holder_killed_with_sigkill_leaves_no_stale_lock(tmp_path):
    with held_elsewhere(tmp_path / "lake", 600) as holder:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        with locked(str(tmp_path / "lake")):  # free at once: the kernel released it with the process
            pass


def test_the_command_line_refuses_before_spark_starts(tmp_path, kafka):
    lake = tmp_path / "lake"
    with locked(str(lake)):
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "lens_cli.main", "pipeline", "run", "all", "--lake", str(lake),
                               "--bootstrap", kafka.bootstrap_servers, "--topic", "any"],
                              cwd=REPO, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "LENS_LOCK_WAIT_S": "0"})
        took = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rebalance-lens: error: the lake") and "in use" in lines[0], lines
    assert f"pid {os.getpid()}" in lines[0]
    assert "Spark" not in done.stdout, done.stdout  # refused before Spark's start-up
    print(f"\nrefused in {took:.1f} s: {lines[0]}")
