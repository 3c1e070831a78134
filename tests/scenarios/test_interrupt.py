"""Ctrl-C on a running command stops what it started for itself: the members always, and a broker
started for the command's duration; the local broker a `scenario run` started (none was given or
running, and the telemetry must outlive the run) stays up until `kafka down`."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support.fresh_home import fresh_home_env, stop_local_broker


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.NoSuchProcess:
        return ""  # a short-lived helper (the broker's storage format step) already exited


def _fleet_up(proc: subprocess.Popen) -> dict[int, psutil.Process]:
    """The command's processes once the broker (java) and the three members (python) run."""
    runner = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    seen: dict[int, psutil.Process] = {}
    while time.monotonic() < deadline:
        seen.update({c.pid: c for c in runner.children(recursive=True)})
        members = [c for c in seen.values() if "lens_scenarios.member" in _cmdline(c)]
        if len(members) >= 3 and any("kafka.Kafka" in _cmdline(c) for c in seen.values()):
            time.sleep(2)
            seen.update({c.pid: c for c in runner.children(recursive=True)})
            return seen
        time.sleep(0.5)
    raise AssertionError("the fleet did not start within 120 s")


def _interrupt(proc: subprocess.Popen, seen: dict[int, psutil.Process]) -> list[psutil.Process]:
    """SIGINT to the command; what of ``seen`` is still alive 5 s after it exited 130."""
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    assert code == 130, proc.stderr.read().decode()
    gone, alive = psutil.wait_procs(list(seen.values()), timeout=5)
    assert len(gone) >= 3
    return alive


def _start(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lens_cli.main", *argv], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:  # the test failed before the interrupt: do not leave the run going
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def test_sigint_stops_the_members_and_keeps_the_local_broker_it_started(tmp_path: Path):
    env = fresh_home_env(tmp_path / "home")
    proc = _start(["scenario", "run", "crash", "--out", str(tmp_path / "runs")], env)
    alive: list[psutil.Process] = []
    try:
        alive = _interrupt(proc, _fleet_up(proc))
        assert [_cmdline(p) for p in alive if "kafka.Kafka" not in _cmdline(p)] == []
        assert len(alive) == 1, [_cmdline(p) for p in alive]
        status = subprocess.run([sys.executable, "-m", "lens_cli.main", "kafka", "status"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert status.returncode == 0 and f"(pid {alive[0].pid})" in status.stdout, status.stdout
    finally:
        _stop(proc)
        stop_local_broker(env)
    assert psutil.wait_procs(alive, timeout=30)[1] == []


@pytest.mark.slow  # a broker of its own and a scenario run's start (~40 s)
def test_sigint_stops_the_broker_started_for_the_command(tmp_path: Path):
    env = fresh_home_env(tmp_path / "home")
    proc = _start(["recommend", "--verify", "crash", "--out", str(tmp_path / "verify")], env)
    try:
        alive = _interrupt(proc, _fleet_up(proc))
        assert alive == [], [(p.pid, _cmdline(p)) for p in alive]
        assert not (tmp_path / "home" / "kafka" / "state.json").exists()  # not the local broker's start
    finally:
        _stop(proc)
        stop_local_broker(env)  # nothing to stop unless the command wrongly started the local broker
