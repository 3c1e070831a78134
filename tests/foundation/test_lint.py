"""The Python lint: ruff with pyproject's settings (pycodestyle and pyflakes, lines up to 120) finds
nothing in the tree. Fast: ruff is one native binary, over the whole tree in well under a second.

Its settings are checked to be in force too: a planted line one over the limit is reported, so a
ruff that read no settings (or a limit raised away) fails here instead of passing quietly."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``ruff check`` from this interpreter's environment (the dev extra pins it), in the project's root."""
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *args],
                          cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing():
    result = _ruff(".")
    assert "No module named ruff" not in result.stderr, "pip install -e '.[dev]' (the dev extra pins ruff)"
    assert result.returncode == 0, f"ruff check (pyproject.toml's [tool.ruff]):\n{result.stdout}{result.stderr}"


def test_the_line_length_is_the_projects():
    planted = f'NAME = "{"x" * 112}"\n'  # 121 characters
    assert len(planted.rstrip("\n")) == 121
    result = _ruff("--stdin-filename", "pipelines/planted.py", "-", stdin=planted)
    assert result.returncode == 1 and "E501 Line too long (121 > 120)" in result.stdout, result.stdout + result.stderr
    assert _ruff("--stdin-filename", "pipelines/planted.py", "-", stdin=planted[1:]).returncode == 0
