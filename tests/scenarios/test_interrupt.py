"""Ctrl-C on a running `scenario run` stops the members and the embedded broker: nothing is left."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import psutil


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.NoSuchProcess:
        return ""  # a short-lived helper (the broker's storage format step) already exited


def test_sigint_leaves_no_process_behind(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "lens_cli.main", "scenario", "run", "crash",
                             "--out", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _interrupt_and_check(proc)
    finally:
        if proc.poll() is None:  # the test failed before the interrupt: do not leave the run going
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)


def _interrupt_and_check(proc: subprocess.Popen) -> None:
    runner = psutil.Process(proc.pid)
    deadline = time.monotonic() + 90
    seen: dict[int, psutil.Process] = {}
    # wait until the broker (java) and the three members (python) are up
    while time.monotonic() < deadline:
        seen.update({c.pid: c for c in runner.children(recursive=True)})
        members = [c for c in seen.values() if "lens_scenarios.member" in _cmdline(c)]
        if len(members) >= 3 and any("kafka.Kafka" in _cmdline(c) for c in seen.values()):
            break
        time.sleep(0.5)
    else:
        raise AssertionError("the fleet did not start within 90 s")
    time.sleep(2)
    seen.update({c.pid: c for c in runner.children(recursive=True)})
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    assert code == 130, proc.stderr.read().decode()
    gone, alive = psutil.wait_procs(list(seen.values()), timeout=5)
    assert not alive, [(p.pid, _cmdline(p)) for p in alive]
    assert len(gone) >= 4
