"""Session-wide fixtures: one Kafka broker and one Spark session for the whole run; the fast
tier's marker and its guard (tests/support/fast_tier.py).

Set LENS_TEST_BOOTSTRAP to point the integration tests at an existing cluster
instead of starting the embedded broker (the tests that need its SASL listener then skip).
"""
from __future__ import annotations

import logging
import os
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fast_tier import MARKER, JvmGuard, is_fast
from tests.support.kafka_cluster import KafkaCluster, SaslListener

_GUARD = pytest.StashKey[JvmGuard]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_GUARD] = JvmGuard(Path(tempfile.mkdtemp(prefix="lens-fast-tier-")))


def pytest_unconfigure(config: pytest.Config) -> None:
    if _GUARD in config.stash:
        shutil.rmtree(config.stash[_GUARD].folder, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if is_fast(item, config.rootpath.resolve()):
            item.add_marker(MARKER)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Arm the guard before the fast test's fixtures are set up."""
    if item.get_closest_marker(MARKER) is not None:
        item.config.stash[_GUARD].arm()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """Disarm it once the test's fixtures are torn down; fail the test if it started a JVM."""
    try:
        return (yield)
    finally:
        if item.get_closest_marker(MARKER) is not None:
            calls = item.config.stash[_GUARD].disarm()
            if calls:
                pytest.fail(f"marked {MARKER!r} but started a JVM: {calls[0]} (see tests/support/fast_tier.py)",
                            pytrace=False)


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaCluster]:
    existing = os.environ.get("LENS_TEST_BOOTSTRAP")
    if existing:
        yield KafkaCluster(existing)
        return
    from lens_runtime.kafka_broker import EmbeddedKafka

    # A SASL_PLAINTEXT listener too, with a password made for this session: the secrets tests
    # authenticate the agent's telemetry producer with it and then look for it everywhere.
    user, password = "lens_agent", secrets.token_hex(16)
    with EmbeddedKafka(sasl_users={user: password}) as broker:
        yield KafkaCluster(broker.bootstrap_servers, broker=broker,
                           sasl=SaslListener(broker.sasl_bootstrap_servers, user, password))


@pytest.fixture(scope="session")
def offsets_capture(kafka):
    """Real plain groups' records on the session broker (tests/support/offsets_capture.py, about 10 s):
    what the broker source's tests decode, and groups without the agent that gold sees from the broker."""
    from tests.support.offsets_capture import capture_offsets

    return capture_offsets(kafka, uuid.uuid4().hex[:8])


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    from lens_runtime.spark_session import SparkSettings, build_spark

    lake = tmp_path_factory.mktemp("lake")
    session = build_spark(SparkSettings(master="local[2]", lake=str(lake), log_level="WARN",
                                          app_name="rebalance-lens-tests"))
    yield session
    session.stop()
    # py4j says at INFO that it closes its connections, also from their finalizers at interpreter exit, after
    # pytest closed the streams its handlers write to ("--- Logging error ---" under the summary)
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture
def unique() -> str:
    """A short unique suffix for topic and group names, so tests never share state."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def table_path(tmp_path: Path) -> str:
    return str(tmp_path / "table")
