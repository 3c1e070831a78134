"""The fast tier (tests/support/fast_tier.py): which tests it takes, its list of exceptions kept
current, and the guard that fails a fast test starting a JVM."""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.fast_tier import JVM_FIXTURES, MARKER, NOT_FAST, JvmGuard, is_fast

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class _Item:
    """What ``is_fast`` reads of a collected test."""

    path: Path
    originalname: str = "test_something"
    fixturenames: list[str] = field(default_factory=lambda: ["tmp_path"])
    markers: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


def test_this_test_is_in_the_tier(request: pytest.FixtureRequest):
    assert request.node.get_closest_marker(MARKER) is not None


def test_a_test_is_fast_unless_slow_on_a_jvm_fixture_or_listed():
    listed_file = next(key for key in NOT_FAST if "::" not in key)
    listed_file_of_test, listed_test = next(key for key in NOT_FAST if "::" in key).split("::")
    plain = ROOT / "tests" / "foundation" / "test_layout.py"
    assert is_fast(_Item(plain), ROOT)
    assert not is_fast(_Item(plain, markers=("slow",)), ROOT)
    assert not is_fast(_Item(plain, fixturenames=["tmp_path", "landed", "kafka"]), ROOT)
    assert not is_fast(_Item(ROOT / listed_file), ROOT)
    assert not is_fast(_Item(ROOT / listed_file_of_test, originalname=listed_test), ROOT)
    assert is_fast(_Item(ROOT / listed_file_of_test, originalname="test_another"), ROOT)


def test_the_jvm_fixtures_and_the_listed_tests_exist():
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    for name in JVM_FIXTURES:
        assert re.search(rf"^@pytest\.fixture\b.*\ndef {name}\(", conftest, flags=re.MULTILINE), name
    for key, why in NOT_FAST.items():
        file, _, test = key.partition("::")
        assert (ROOT / file).is_file() and why, key
        assert not test or re.search(rf"^def {test}\(", (ROOT / file).read_text(), flags=re.MULTILINE), key


def test_the_guard_catches_java_on_path_and_under_java_home_and_restores_both(tmp_path: Path):
    before = {name: os.environ.get(name) for name in ("PATH", "JAVA_HOME")}
    guard = JvmGuard(tmp_path)
    guard.arm()
    try:
        on_path = subprocess.run(["java", "-version"], capture_output=True, text=True)
        under_home = subprocess.run([f"{os.environ['JAVA_HOME']}/bin/java", "-cp", "x", "Main"],
                                    capture_output=True, text=True)
    finally:
        calls = guard.disarm()
    assert on_path.returncode == under_home.returncode == 97
    assert "fast_tier.py" in on_path.stderr
    assert [call.split(" ", 1)[1] for call in calls] == ["-version", "-cp x Main"]
    assert {name: os.environ.get(name) for name in ("PATH", "JAVA_HOME")} == before
