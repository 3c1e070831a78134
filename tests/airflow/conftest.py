"""Airflow for the tests: a metadata database of their own (SQLite in a temporary AIRFLOW_HOME,
migrated once a session), this checkout's DAG folder, no example DAGs; and for the slow suite a
real Airflow (``standalone_airflow``).

Set when this file is imported: Airflow reads its configuration the first time it is imported,
and the tests must never touch a developer's ~/airflow.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "airflow" / "dags"
AIRFLOW = str(Path(sys.executable).with_name("airflow"))
AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="lens-airflow-"))
atexit.register(shutil.rmtree, AIRFLOW_HOME, ignore_errors=True)
os.environ.update({
    "AIRFLOW_HOME": str(AIRFLOW_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
})


@pytest.fixture(scope="session")
def dags_folder() -> Path:
    return DAGS


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The session's metadata database, migrated (what `dag.test()` needs); AIRFLOW_HOME."""
    done = subprocess.run([AIRFLOW, "db", "migrate"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return AIRFLOW_HOME


@pytest.fixture(scope="session")
def dagbag():
    """This checkout's DAG folder, parsed as the DAG processor parses a bundle."""
    from airflow.dag_processing.dagbag import BundleDagBag

    return BundleDagBag(dag_folder=str(DAGS), bundle_path=str(DAGS), bundle_name="dags-folder")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _own_group_hearing_sigint() -> None:
    """In the child before exec: a process group of its own, and SIGINT back to its default (a
    test run started in the background by a shell ignores SIGINT, and children inherit that)."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class StandaloneAirflow:
    """A real Airflow for a test: ``airflow standalone`` (scheduler, DAG processor, API server,
    triggerer, LocalExecutor) on SQLite in its own AIRFLOW_HOME, this checkout's DAG folder, four
    workers, a free port; driven through its REST API as an operator would.

    Started in a process group of its own and stopped with SIGINT to that group (the signal it
    stops cleanly on), then SIGTERM to what SIGINT left, then SIGKILL; ``stop`` says what is still
    running after that (nothing, or the test fails)."""

    def __init__(self, home: Path, dags: Path, environ: dict[str, str] | None = None) -> None:
        self.home, self.port = home, _free_port()
        self.url = f"http://localhost:{self.port}"
        self.env = {**os.environ, **(environ or {}),
                    # standalone starts its parts as `airflow ...` commands: this environment's first
                    "PATH": f"{Path(AIRFLOW).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                    "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
                    "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__PARALLELISM": "4",
                    "AIRFLOW__API__PORT": str(self.port),
                    # task runs report to the API server: on another port than 8080 they must be told where
                    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/"}
        self.process: subprocess.Popen | None = None
        self.log = home / "standalone.log"
        self._token = ""

    def cli(self, *args: str) -> str:
        """An ``airflow`` command against this home (the operator's shell)."""
        done = subprocess.run([AIRFLOW, *args], env=self.env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"airflow {' '.join(args)}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
        return done.stdout

    def start(self, timeout_s: float = 180) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen([AIRFLOW, "standalone"], env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                            preexec_fn=_own_group_hearing_sigint)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"airflow standalone exited: {self.tail()}"
            try:
                if requests.get(f"{self.url}/api/v2/monitor/health", timeout=5).ok:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(1)
        raise AssertionError(f"airflow standalone did not answer on {self.url} in {timeout_s:.0f} s: {self.tail()}")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""

    def _login(self) -> str:
        """A token for the admin user standalone created (its password in AIRFLOW_HOME)."""
        if not self._token:
            passwords = json.loads((self.home / "simple_auth_manager_passwords.json.generated").read_text())
            answer = requests.post(f"{self.url}/auth/token", json={"username": "admin", "password": passwords["admin"]},
                                   timeout=30)
            answer.raise_for_status()
            self._token = answer.json()["access_token"]
        return self._token

    def api(self, method: str, path: str, body: dict[str, Any] | None = None, ok: tuple[int, ...] = (200, 201)) -> Any:
        answer = requests.request(method, f"{self.url}/api/v2/{path}", json=body, timeout=30,
                                  headers={"Authorization": f"Bearer {self._login()}"})
        assert answer.status_code in ok, f"{method} {path}: {answer.status_code} {answer.text[:500]}"
        return answer.json() if answer.content else None

    def wait_for(self, what: str, probe, timeout_s: float, every_s: float = 3.0) -> Any:
        """``probe()``'s first truthy answer; fails after ``timeout_s`` with the log's tail."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = probe()
            if found:
                return found
            time.sleep(every_s)
        raise AssertionError(f"{what}: not within {timeout_s:.0f} s; airflow's log ends:\n{self.tail()}")

    def _processes(self) -> list[psutil.Process]:
        """Every running process this Airflow started: standalone's group, its descendants, and any
        process whose environment names this AIRFLOW_HOME (a task's supervisor starts a session of
        its own; a task's Spark JVM inherits the environment)."""
        assert self.process is not None
        group, home, found = self.process.pid, str(self.home), {}
        for p in psutil.process_iter():
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                if os.getpgid(p.pid) == group or p.environ().get("AIRFLOW_HOME") == home:
                    found[p.pid] = p
        with contextlib.suppress(psutil.NoSuchProcess):
            found.update({c.pid: c for c in psutil.Process(group).children(recursive=True)})
        return [p for p in found.values() if _running(p)]

    def stop(self, int_grace_s: float = 60, term_grace_s: float = 30) -> list[str]:
        """SIGINT to the process group (standalone's clean stop: it stops its parts), then SIGTERM to
        every process of this Airflow left after ``int_grace_s``, then SIGKILL to what is left
        ``term_grace_s`` later. Returns what is still running after all that: empty when the stop
        worked. Prints what needed SIGTERM or SIGKILL.

        Why more than SIGINT: on SIGINT standalone terminates its four parts, then joins the threads
        that read their output (airflow/cli/commands/standalone_command.py), which end only when
        every process holding that output has closed it. Seen here on an idle standalone: a minute
        after SIGINT, standalone, the scheduler and the LocalExecutor's four workers still ran;
        SIGTERM ended the first two, and the workers, blocked on their queue (they ignore SIGINT,
        and most likely handle SIGTERM with the handler they inherit from the scheduler they were
        forked from), needed SIGKILL. A part that exited is a zombie until its parent reaps it:
        gone, not running (the old check, by psutil.wait_procs, counted zombies as running)."""
        if self.process is None:
            return []
        processes = self._processes()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGINT)
        for sig, grace_s in ((signal.SIGTERM, int_grace_s), (signal.SIGKILL, term_grace_s)):
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and any(_running(p) for p in processes):
                time.sleep(0.5)
            processes = [p for p in {q.pid: q for q in (*processes, *self._processes())}.values() if _running(p)]
            if not processes:
                break
            print(f"airflow stop: {signal.Signals(sig).name} to {len(processes)} left: {_names(processes)}")
            for p in processes:
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.send_signal(sig)
        psutil.wait_procs(processes, timeout=10)
        left = _names(self._processes())
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        self.process = None
        return left


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _names(processes: list[psutil.Process]) -> list[str]:
    names = []
    for p in processes:
        with contextlib.suppress(psutil.Error):
            names.append(f"{p.pid} {' '.join(p.cmdline())[:100]}")
    return names


@pytest.fixture
def standalone_airflow(tmp_path: Path) -> Iterator[StandaloneAirflow]:
    """A real Airflow over this checkout's DAGs in ``tmp_path`` (not started); stopped after the test."""
    airflow = StandaloneAirflow(tmp_path / "airflow-home", DAGS)
    yield airflow
    airflow.stop()
