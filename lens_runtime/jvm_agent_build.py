"""The Java agent's jar (``jvm_agent/``), built by ``rebalance-lens setup`` in a source checkout.

Maven runs only when a source or the pom is newer than the jar, and offline (``-o``) once a
first build has fetched the plugins and dependencies: a second setup starts no Maven at all.
An installed wheel has no ``jvm_agent/`` folder: there is nothing to build.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from lens_runtime.errors import LensError
from lens_runtime.jvm_deps import maven
from lens_runtime.paths import CHECKOUT

MODULE = CHECKOUT / "jvm_agent"
JAR = MODULE / "target" / "rebalance-lens-agent.jar"
LIB = MODULE / "target" / "lib"
JAVAAGENT = MODULE / "target" / "rebalance-lens-javaagent.jar"  # built by the same `mvn package`


def _sources() -> list[Path]:
    return [MODULE / "pom.xml", *(MODULE / "src").rglob("*")]


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


def ensure_agent_jar() -> Path | None:
    """Build the jar unless current; None outside a source checkout."""
    if not (MODULE / "pom.xml").is_file():
        return None
    if not jar_is_current():
        offline = ("-o",) if LIB.is_dir() else ()
        print(f"rebalance-lens: building the Java agent ({MODULE.name}/) with Maven{' offline' if offline else ''} ...",
              file=sys.stderr, flush=True)
        maven(MODULE / "pom.xml", *offline, "package")
    return JAR


def agent_classpath() -> str:
    """The jar and its dependencies (kafka-clients, Jackson), for ``java -cp``."""
    if not jar_is_current():
        raise LensError(f"The Java agent's jar {JAR} is missing or older than its sources. "
                        "Run `rebalance-lens setup` (or ./lens setup) to build it.")
    return ":".join(str(path) for path in (JAR, *sorted(LIB.glob("*.jar"))))
