"""Runs the tests' Java drivers (RebalanceDriver, EnforceDriver) against the agent's jar and the real broker.

Each is compiled with CallLog.java, the application listener they share (java 17's single-file launcher cannot
see a second source file), into the test's own folder.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from lens_runtime.jvm_agent_build import agent_classpath, ensure_agent_jar

DRIVERS = Path(__file__).parents[1] / "jvm_agent"  # the drivers' Java sources, beside their tests


def run_driver(name: str, args: list[str], folder: Path) -> None:
    """Compile ``<name>.java`` with CallLog.java into ``folder``, run it with ``args``; fail with its stderr."""
    ensure_agent_jar()
    classes = folder / f"{name}-classes"
    subprocess.run(["javac", "-nowarn", "-cp", agent_classpath(), "-d", str(classes), str(DRIVERS / f"{name}.java"),
                    str(DRIVERS / "CallLog.java")], check=True, timeout=300)
    run = subprocess.run(["java", "-cp", f"{classes}:{agent_classpath()}", name, *args],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
