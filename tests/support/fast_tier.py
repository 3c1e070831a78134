"""The fast tier (`./lens test -m fast`): the tests that start no JVM, so no Spark and no broker.

Which tests are fast is decided here, at collection, so nobody marks tests by hand: a test is
fast unless it is slow, asks for a fixture that starts a JVM (``spark``, ``kafka``, or any
fixture built on them, which pytest's fixture closure shows), or is listed in ``NOT_FAST``, by
file or by test (a JVM started some other way, or too slow for a tier meant to run after every
change).

The marker is enforced, not trusted: while a fast test runs (its fixtures' set-up included),
``java`` on PATH and under JAVA_HOME is a stub that records the call and fails, so a fast test
that starts a JVM in any way (in-process Spark, the embedded broker, a child process) fails
with a message naming this file instead of quietly slowing the tier down.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MARKER = "fast"
# The fixtures that start a JVM: the session's Spark and its Kafka broker (tests/conftest.py).
JVM_FIXTURES = frozenset({"spark", "kafka"})
# Tests that start a JVM without asking for those fixtures: a file relative to the repository,
# or one test of it (``file::test_name``) -> why. A missing entry fails loudly (the stub below);
# an entry whose file or test is gone fails tests/foundation/test_fast_tier.py.
NOT_FAST: dict[str, str] = {
    "tests/report/test_fleet_report.py::test_the_500_group_report_opens_in_a_real_browser":
        "opens Debian's chromium (the fast tier needs no browser)",
    "tests/airflow/test_dags_in_process.py": "dag.test() runs the pipeline's stages in-process (Spark)",
    "tests/foundation/test_embedded_kafka.py": "starts EmbeddedKafka itself",
    "tests/broker_log/test_kafka_serde_oracle.py": "Kafka's own serde runs in a JVM (tests/support/kafka_serde.py)",
    "tests/scenarios/test_interrupt.py": "a scenario run in a child process starts its own broker",
    "tests/foundation/test_cli.py::test_user_errors_print_one_line_without_a_trace":
        "`kafka up` checks the Java version (java -version) before it finds the port taken",
    "tests/foundation/test_jvm_deps.py::test_unreachable_maven_central_is_named": "a real Maven run (a JVM)",
    "tests/jvm_agent/test_framework_apps.py::test_each_application_is_built_with_the_kafka_clients_its_framework_brings":
        "Maven builds the framework applications (a JVM)",
    "tests/jvm_agent/test_kafka_clients_matrix.py::test_the_check_names_each_versions_family_and_what_an_older_one_lacks":
        "runs the javaagent's check (a JVM), after Maven resolves each version",
}
_STUB = """#!/bin/sh
echo "$0 $*" >> '{log}'
echo "rebalance-lens fast tier: a test marked '{marker}' started a JVM ($0 $*). Let it ask for the" \\
     "spark or kafka fixture, or list its file in tests/support/fast_tier.py's NOT_FAST." >&2
exit 97
"""


def is_fast(item: pytest.Item, root: Path) -> bool:
    """Whether ``item`` belongs to the fast tier (see the module docstring)."""
    if item.get_closest_marker("slow") is not None:
        return False
    if JVM_FIXTURES & set(getattr(item, "fixturenames", ())):
        return False
    file = item.path.resolve().relative_to(root).as_posix()
    test = getattr(item, "originalname", None) or item.name  # without its parameters
    return file not in NOT_FAST and f"{file}::{test}" not in NOT_FAST


@dataclass
class JvmGuard:
    """Swaps ``java`` for a failing stub while a fast test runs; tells which calls it caught."""

    folder: Path
    _saved: dict[str, str | None] = field(default_factory=dict)

    @property
    def log(self) -> Path:
        return self.folder / "java-calls.log"

    def arm(self) -> None:
        """Put the stub first on PATH and under JAVA_HOME (child processes inherit both)."""
        java = self.folder / "bin" / "java"
        if not java.exists():
            java.parent.mkdir(parents=True, exist_ok=True)
            java.write_text(_STUB.format(log=self.log, marker=MARKER))
            java.chmod(0o755)
        self.log.unlink(missing_ok=True)
        self._saved = {name: os.environ.get(name) for name in ("PATH", "JAVA_HOME")}
        os.environ["JAVA_HOME"] = str(self.folder)
        os.environ["PATH"] = f"{java.parent}{os.pathsep}{os.environ.get('PATH', '')}"

    def disarm(self) -> list[str]:
        """Restore PATH and JAVA_HOME; the java command lines the stub caught since ``arm``."""
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved = {}
        return self.log.read_text().splitlines() if self.log.exists() else []
