"""Fixtures of the Java agent's tests that run real applications: the apps and the javaagent jar, built once."""
from __future__ import annotations

from pathlib import Path

import pytest

from lens_runtime.jvm_agent_build import JAVAAGENT, ensure_agent_jar
from tests.support import framework_apps


@pytest.fixture(scope="session")
def built() -> None:
    """The framework applications (tests/jvm_agent/apps/), built unless current."""
    framework_apps.ensure_built()


@pytest.fixture(scope="session")
def javaagent() -> Path:
    """The -javaagent jar, built unless current."""
    ensure_agent_jar()
    return JAVAAGENT
