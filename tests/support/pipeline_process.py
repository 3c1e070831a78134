"""The pipeline as an operator runs it: ``rebalance-lens pipeline run`` in a process of its own
(its own JVM), watched line by line, and killed with SIGKILL when told."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pipelines.config import PipelineConfig

REPO = Path(__file__).resolve().parents[2]


def command(config: PipelineConfig, stage: str = "all", *extra: str) -> list[str]:
    """The command line of ``config``'s run: its broker, topic and lake, and the brokers' KIP-848
    settings the recommend stage prices with (left out, a child priced with the defaults and its
    recommendations differed from an in-process run's over the same events)."""
    return [sys.executable, "-m", "lens_cli.main", "pipeline", "run", stage, "--bootstrap", config.bootstrap_servers,
            "--topic", config.topic, "--lake", config.lake_path,
            "--kip848-heartbeat-ms", str(config.kip848_heartbeat_ms),
            "--kip848-session-timeout-ms", str(config.kip848_session_timeout_ms), *extra]


def start(config: PipelineConfig, stage: str = "all", *extra: str, env: dict[str, str] | None = None
          ) -> subprocess.Popen:
    """A pipeline run in its own process group (its JVM dies with it), output merged on stdout."""
    return subprocess.Popen(command(config, stage, *extra), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, "LENS_SPARK_LOG_LEVEL": "ERROR", **(env or {})})


@dataclass
class Killed:
    output: str
    after_marker_s: float  # how long after the marker line the kill came

    def finished(self, stage: str) -> bool:
        """The stage had finished before the kill (its ``done`` line was printed)."""
        return f"[{stage}] done" in self.output


def run_and_kill(config: PipelineConfig, marker: str, delay_s: float, timeout_s: float = 900) -> Killed:
    """Run every stage; SIGKILL the process group ``delay_s`` after a line containing ``marker``.
    The output includes what the process printed before it died."""
    proc = start(config)
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    marked = killed = None
    try:
        for line in proc.stdout:
            seen.append(line)
            if marker in line:
                marked = time.monotonic()
                time.sleep(delay_s)
                break
            if time.monotonic() > deadline:
                break
    finally:
        killed = time.monotonic()
        os.killpg(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=60)
    output = "".join(seen) + (rest or "")
    assert marked is not None, f"no {marker!r} line; the run printed:\n{output[-3000:]}"
    return Killed(output, killed - marked)
