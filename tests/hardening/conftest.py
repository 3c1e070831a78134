"""The hardening tests' one expensive fixture: the hostile lake (tests/support/hostile_world.py),
built once per session for the tests that read it."""
from __future__ import annotations

import pytest

from tests.support.hostile_world import World, build_world


@pytest.fixture(scope="session")
def world(spark, kafka, tmp_path_factory) -> World:
    if kafka.sasl is None:
        pytest.skip("needs the embedded broker's SASL listener (LENS_TEST_BOOTSTRAP is set)")
    return build_world(spark, kafka, tmp_path_factory.mktemp("world"))
