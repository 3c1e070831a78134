"""The Java agent's jar is built by set-up only when its module changed, and offline once built."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lens_runtime import jvm_agent_build


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """A module folder in tmp_path and a Maven that records its goals and writes the jar and its lib/."""
    folder = tmp_path / "jvm_agent"
    (folder / "src").mkdir(parents=True)
    (folder / "pom.xml").write_text("<project/>")
    (folder / "src" / "A.java").write_text("class A {}")
    jar, lib = folder / "target" / "agent.jar", folder / "target" / "lib"
    monkeypatch.setattr(jvm_agent_build, "MODULE", folder)
    monkeypatch.setattr(jvm_agent_build, "JAR", jar)
    monkeypatch.setattr(jvm_agent_build, "LIB", lib)
    runs: list[tuple[str, ...]] = []

    def fake_maven(pom: Path, *goals: str) -> None:
        assert pom == folder / "pom.xml"
        runs.append(goals)
        lib.mkdir(parents=True, exist_ok=True)
        (lib / "kafka-clients.jar").write_text("")
        jar.write_text("")

    monkeypatch.setattr(jvm_agent_build, "maven", fake_maven)
    return runs


def test_built_once_then_only_when_a_source_changes_and_offline(module: list[tuple[str, ...]]):
    jar = jvm_agent_build.ensure_agent_jar()
    assert module == [("package",)] and jar == jvm_agent_build.JAR
    assert jvm_agent_build.ensure_agent_jar() == jar and module == [("package",)]  # current: no Maven
    earlier = jar.stat().st_mtime - 5  # the jar predates the source's last edit
    os.utime(jar, (earlier, earlier))
    with pytest.raises(Exception, match="older than its sources"):
        jvm_agent_build.agent_classpath()
    jvm_agent_build.ensure_agent_jar()
    assert module == [("package",), ("-o", "package")]  # the plugins and dependencies are there already
    assert jvm_agent_build.agent_classpath().split(":")[0] == str(jar)


def test_an_installed_wheel_has_nothing_to_build(module: list[tuple[str, ...]]):
    (jvm_agent_build.MODULE / "pom.xml").unlink()
    assert jvm_agent_build.ensure_agent_jar() is None and module == []
