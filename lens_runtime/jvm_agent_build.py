"""The Java agent's jar (``jvm_agent/``), built by ``rebalance-lens setup`` in a source checkout.

Maven runs only when a source, the pom or the agent spec it carries (``consumer_agent/agent-spec-v1.json``)
is newer than the jar. Its package phase runs the module's JUnit tests first, so a jar that is current
is one whose sources passed them; their reports stay in ``target/surefire-reports`` (``junit_run``
reads them, and a fast test checks they are current and green without starting a JVM). Maven runs
offline (``-o``) once a build has fetched the plugins and dependencies of the pom as it is now: a
second setup starts no Maven at all, and a changed pom (a new dependency) is fetched once, online.
An installed wheel has no ``jvm_agent/`` folder: there is nothing to build.
"""
from __future__ import annotations

import hashlib
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lens_runtime.errors import LensError
from lens_runtime.jvm_deps import maven
from lens_runtime.paths import CHECKOUT

MODULE = CHECKOUT / "jvm_agent"
SPEC = CHECKOUT / "consumer_agent" / "agent-spec-v1.json"
JAR = MODULE / "target" / "rebalance-lens-agent.jar"
LIB = MODULE / "target" / "lib"
JAVAAGENT = MODULE / "target" / "rebalance-lens-javaagent.jar"  # built by the same `mvn package`
REPORTS = MODULE / "target" / "surefire-reports"
# The pom (its hash) whose plugins and dependencies a build fetched: the next build of it runs offline.
RESOLVED = MODULE / "target" / "resolved-pom.sha256"


def _sources() -> list[Path]:
    return [MODULE / "pom.xml", SPEC, *(MODULE / "src").rglob("*")]


def _pom_hash() -> str:
    return hashlib.sha256((MODULE / "pom.xml").read_bytes()).hexdigest()


def built_after(outputs: Iterable[Path], sources: Iterable[Path]) -> bool:
    """Every output exists and no source changed since the oldest of them was built."""
    outputs = list(outputs)
    if not all(path.is_file() for path in outputs):
        return False
    built = min(path.stat().st_mtime for path in outputs)
    return all(path.stat().st_mtime <= built for path in sources)


def jar_is_current() -> bool:
    """The jar and its runtime classpath exist, and nothing of the module changed since the jar was built."""
    return any(LIB.glob("*.jar")) and built_after([JAR], _sources())


@dataclass(frozen=True)
class JUnitRun:
    """What the module's last ``mvn test`` reported."""

    tests: int
    failed: list[str]          # "Class.test: message" of each failure or error
    classes: set[str]          # the test classes that ran
    current: bool              # every report is newer than every source


def junit_run() -> JUnitRun | None:
    """The JUnit tests' results from surefire's reports; None when they never ran."""
    reports = sorted(REPORTS.glob("TEST-*.xml"))
    if not reports:
        return None
    tests, failed, classes = 0, [], set()
    for report in reports:
        suite = ET.parse(report).getroot()
        tests += int(suite.get("tests", "0"))
        classes.add(suite.get("name", report.stem))
        for case in suite.iter("testcase"):
            for problem in (*case.iter("failure"), *case.iter("error")):
                failed.append(f"{case.get('classname')}.{case.get('name')}: {problem.get('message', '')}"[:300])
    newest = max(path.stat().st_mtime for path in _sources())
    return JUnitRun(tests, failed, classes, all(report.stat().st_mtime >= newest for report in reports))


def _build(offline: bool) -> None:
    """``mvn package``; a failing JUnit test is named as such (not as a resolution failure)."""
    try:
        maven(MODULE / "pom.xml", *(("-o",) if offline else ()), "package")
    except LensError:
        run = junit_run()
        if run is not None and run.current and run.failed:
            raise LensError(f"The Java agent's JUnit tests failed ({len(run.failed)} of {run.tests}; reports in "
                            f"{REPORTS}):\n" + "\n".join(run.failed[:10])) from None
        raise


def ensure_agent_jar() -> Path | None:
    """Build the jar (its JUnit tests first) unless current; None outside a source checkout."""
    if not (MODULE / "pom.xml").is_file():
        return None
    if not jar_is_current():
        offline = RESOLVED.is_file() and RESOLVED.read_text().strip() == _pom_hash()
        print(f"rebalance-lens: building the Java agent ({MODULE.name}/) and running its JUnit tests with Maven"
              f"{' offline' if offline else ''} ...", file=sys.stderr, flush=True)
        _build(offline)
        JAR.touch()  # the jar plugin keeps a jar whose classes did not change: it passed the tests of this build
        RESOLVED.write_text(_pom_hash())
    return JAR


def _current() -> None:
    if not jar_is_current():
        raise LensError(f"The Java agent's jar {JAR} is missing or older than its sources. "
                        "Run `rebalance-lens setup` (or ./lens setup) to build it.")


def agent_classpath() -> str:
    """The jar and its dependencies (kafka-clients, Jackson), for ``java -cp``."""
    _current()
    return ":".join(str(path) for path in (JAR, *sorted(LIB.glob("*.jar"))))


def javaagent_jar() -> Path:
    """The ``-javaagent:`` jar (built with the library, by the same ``mvn package``)."""
    _current()
    return JAVAAGENT
