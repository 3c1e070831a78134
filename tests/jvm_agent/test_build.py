"""The Java agent's jar is built by set-up only when its module changed, offline once its pom's
plugins and dependencies were fetched, and only once its JUnit tests passed; those tests ran on the
current sources and passed (read from their reports: the fast tier starts no JVM)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from lens_runtime import jvm_agent_build
from lens_runtime.errors import LensError

_FAILED = """<testsuite name="io.x.ATest" tests="2" failures="1" errors="0">
  <testcase classname="io.x.ATest" name="works"/>
  <testcase classname="io.x.ATest" name="breaks"><failure message="expected: 1 but was: 2"/></testcase>
</testsuite>"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """A module folder in tmp_path and a Maven that records its goals and writes the jar and its lib/
    (or, when ``module.fail`` is set, a failing JUnit report and Maven's error)."""
    folder = tmp_path / "jvm_agent"
    (folder / "src").mkdir(parents=True)
    (folder / "pom.xml").write_text("<project/>")
    (folder / "src" / "A.java").write_text("class A {}")
    (tmp_path / "spec.json").write_text("{}")
    jar, lib = folder / "target" / "agent.jar", folder / "target" / "lib"
    for name, value in {"MODULE": folder, "JAR": jar, "LIB": lib, "SPEC": tmp_path / "spec.json",
                        "REPORTS": folder / "target" / "surefire-reports",
                        "RESOLVED": folder / "target" / "resolved.sha256"}.items():
        monkeypatch.setattr(jvm_agent_build, name, value)
    runs: list[tuple[str, ...]] = []

    def fake_maven(pom: Path, *goals: str) -> None:
        assert pom == folder / "pom.xml"
        runs.append(goals)
        if (folder / "fail").exists():
            jvm_agent_build.REPORTS.mkdir(parents=True, exist_ok=True)
            (jvm_agent_build.REPORTS / "TEST-io.x.ATest.xml").write_text(_FAILED)
            raise LensError("Maven failed to resolve the pinned jars (jvm/pom.xml). Maven said: "
                            "There are test failures.")
        lib.mkdir(parents=True, exist_ok=True)
        (lib / "kafka-clients.jar").write_text("")
        jar.write_text("")

    monkeypatch.setattr(jvm_agent_build, "maven", fake_maven)
    return runs


def _touch_sources_after_the_jar() -> None:
    earlier = jvm_agent_build.JAR.stat().st_mtime - 5  # the jar predates the sources' last edit
    os.utime(jvm_agent_build.JAR, (earlier, earlier))


def test_built_once_then_only_when_a_source_changes_and_offline(module: list[tuple[str, ...]]):
    jar = jvm_agent_build.ensure_agent_jar()
    assert module == [("package",)] and jar == jvm_agent_build.JAR
    assert jvm_agent_build.ensure_agent_jar() == jar and module == [("package",)]  # current: no Maven
    _touch_sources_after_the_jar()
    with pytest.raises(Exception, match="older than its sources"):
        jvm_agent_build.agent_classpath()
    jvm_agent_build.ensure_agent_jar()
    assert module == [("package",), ("-o", "package")]  # the plugins and dependencies are there already
    assert jvm_agent_build.agent_classpath().split(":")[0] == str(jar)


def test_a_changed_pom_is_built_online_once(module: list[tuple[str, ...]]):
    jvm_agent_build.ensure_agent_jar()
    (jvm_agent_build.MODULE / "pom.xml").write_text("<project><!-- a new dependency --></project>")
    _touch_sources_after_the_jar()
    jvm_agent_build.ensure_agent_jar()
    _touch_sources_after_the_jar()
    jvm_agent_build.ensure_agent_jar()
    assert module == [("package",), ("package",), ("-o", "package")]


def test_a_failing_junit_test_is_named(module: list[tuple[str, ...]]):
    (jvm_agent_build.MODULE / "fail").write_text("")
    with pytest.raises(LensError, match=r"JUnit tests failed \(1 of 2.*\n.*io.x.ATest.breaks: expected: 1 but was: 2"):
        jvm_agent_build.ensure_agent_jar()
    assert not jvm_agent_build.RESOLVED.exists()  # nothing was built: the next try goes online again


def test_an_installed_wheel_has_nothing_to_build(module: list[tuple[str, ...]]):
    (jvm_agent_build.MODULE / "pom.xml").unlink()
    assert jvm_agent_build.ensure_agent_jar() is None and module == []


def test_the_java_agents_junit_tests_ran_on_its_current_sources_and_passed():
    """The set-up's build runs them (Maven's package phase tests first; ./lens test sets up before it
    runs pytest), so here they are read, not run: the fast tier starts no JVM."""
    run = jvm_agent_build.junit_run()
    assert run is not None and run.current, (
        "the Java agent's JUnit tests have not run on its current sources: ./lens setup (or "
        "mvn -o -f jvm_agent/pom.xml package) builds the jar and runs them")
    assert run.failed == [] and run.tests >= 40, run
    written = {re.sub(r"^.*/src/test/java/|\.java$", "", str(path)).replace("/", ".")
               for path in (jvm_agent_build.MODULE / "src" / "test" / "java").rglob("*Test.java")}
    assert written and run.classes == written
