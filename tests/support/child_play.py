"""Play one program in child processes, one per consumer kind, at once, and collect what each printed.

A child prints its transcript as JSON lines on stdout. A child still running after the
limit is killed (a host can block librdkafka for good) and its transcript ends with
``blocked``; how it ended (exit status, seconds) comes with the lines.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Played:
    """One child's transcript and how it ended."""

    lines: list[list]
    returncode: int | None  # None: killed after the limit (its lines end with "blocked")
    seconds: float
    stderr: str


def play(module: str, kinds: Iterable[str], args: list[str], limit_s: float) -> dict[str, Played]:
    """Run ``python -m module KIND *args`` for every kind at once; the transcript of each."""
    kinds = list(kinds)
    with ThreadPoolExecutor(len(kinds)) as pool:
        return dict(zip(kinds, pool.map(lambda kind: _one(module, kind, args, limit_s), kinds)))


def _one(module: str, kind: str, args: list[str], limit_s: float) -> Played:
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", module, kind, *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        text, errors = proc.communicate(timeout=limit_s)
        blocked = []
    except subprocess.TimeoutExpired:
        proc.kill()
        text, errors = proc.communicate()
        blocked = [["blocked", f"still running after {limit_s} s"]]
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("[")] + blocked
    return Played(lines, None if blocked else proc.returncode, time.monotonic() - started, errors)
