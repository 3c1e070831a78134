"""The one rule for which broker a command uses (``lens_runtime.broker_choice``), without a broker:
``--bootstrap``, else LENS_KAFKA_BOOTSTRAP, else the broker `kafka up` recorded while it is alive,
else the command's fallback. The fallbacks that start a broker are played for real elsewhere:
`scenario run`'s kept local broker in tests/scenarios/test_interrupt.py, a broker for the
command's duration there too (slow) and in the demo (slow), the README's recipe in either order
in tests/foundation/test_readme_recipes.py (slow)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lens_runtime.broker_choice import BOOTSTRAP_ENV, NO_BROKER, Fallback, broker_for, find_broker
from lens_runtime.errors import LensError
from pipelines.config import PipelineConfig


def _record_local_broker(home, pid: int, port: int) -> None:
    """What `kafka up` leaves in the home: the broker's pid and ports."""
    (home / "kafka").mkdir(parents=True)
    (home / "kafka" / "state.json").write_text(json.dumps(
        {"pid": pid, "port": port, "controller_port": port + 1, "workdir": str(home / "kafka" / "broker")}))


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LENS_HOME", str(tmp_path))
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    return tmp_path


def test_given_then_environment_then_the_recorded_local_broker(home):
    _record_local_broker(home, os.getpid(), 19092)  # a live pid stands for the broker
    local = find_broker(None, {})
    assert (local.bootstrap_servers, local.embedded) == ("127.0.0.1:19092", True)
    assert "kafka up" in local.line()
    from_env = find_broker(None, {BOOTSTRAP_ENV: "cluster:9092"})
    assert (from_env.bootstrap_servers, from_env.embedded) == ("cluster:9092", False)
    assert BOOTSTRAP_ENV in from_env.line()
    given = find_broker("given:9092", {BOOTSTRAP_ENV: "cluster:9092"})
    assert (given.bootstrap_servers, given.why) == ("given:9092", "--bootstrap")
    # the pipeline's settings follow the same rule
    assert PipelineConfig.resolve({}).bootstrap_servers == "127.0.0.1:19092"
    assert PipelineConfig.resolve({BOOTSTRAP_ENV: "cluster:9092"}).bootstrap_servers == "cluster:9092"


def test_a_dead_local_broker_is_not_used_and_a_command_that_cannot_start_one_says_the_three_ways(home):
    _record_local_broker(home, _dead_pid(), 19092)
    assert find_broker(None, {}) is None
    assert PipelineConfig.resolve({}).bootstrap_servers == ""
    said = []
    with pytest.raises(LensError) as err, broker_for(None, Fallback.NONE, said.append, {}):
        pass
    assert str(err.value) == NO_BROKER and "\n" not in NO_BROKER and said == []
    for way in ("--bootstrap", BOOTSTRAP_ENV, "kafka up"):
        assert way in NO_BROKER


def test_a_broker_found_is_named_in_one_line_and_never_started(home):
    said = []
    for fallback in Fallback:
        with broker_for("given:9092", fallback, said.append, {}) as broker:
            assert broker.bootstrap_servers == "given:9092" and not broker.own
    assert said == ["Kafka: given:9092 (--bootstrap)"] * len(Fallback)
    assert not (home / "kafka").exists()  # the local broker was not started
