"""The -javaagent jar (jvm_agent/target/rebalance-lens-javaagent.jar) instruments an application that knows nothing
of it: PlainConsumerApp.java (beside this file) builds a plain KafkaConsumer, and two runs of it, as two members
of one group, go through a rebalance (b joins, b leaves). The agent is configured one member by a system property
and the other by an environment variable; its telemetry is read back and validated against the v1 schema.
The app's classpath has kafka-clients and its own dependencies only: the agent brings (and hides) the rest.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lens_runtime.jvm_agent_build import JAVAAGENT, LIB, ensure_agent_jar
from pipelines import catalog, lake
from pipelines.config import PipelineConfig, embedded_broker_groups
from pipelines.stages import run_pipeline
from tests.support.telemetry_log import TelemetryLog

APP = Path(__file__).with_name("PlainConsumerApp.java")
PARTITIONS = 4
PER_PARTITION = 20
ALL = set(range(PARTITIONS))


class Member:
    """One run of PlainConsumerApp: its JVM, what its listener printed, and the file that stops it."""

    def __init__(self, tmp_path: Path, name: str, classpath: str, args: list[str], jvm: list[str],
                 env: dict[str, str]) -> None:
        self.stdout, self.stderr, self.stop_file = (tmp_path / f"{name}.{s}" for s in ("out", "err", "stop"))
        with self.stdout.open("w") as out, self.stderr.open("w") as err:
            self.process = subprocess.Popen(["java", "-XX:TieredStopAtLevel=1", *jvm, "-cp", classpath, APP.stem, *args,
                                             str(self.stop_file)], stdout=out, stderr=err, env=env)

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.read_text().splitlines() if line.startswith("{")]

    def listener_calls(self) -> list[tuple[str, list[int]]]:
        return [(c["callback"], c["partitions"]) for c in self.lines() if "partitions" in c]

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for callback, partitions in self.listener_calls():  # eager revokes all before it assigns: both fit
            owned = owned | set(partitions) if callback == "assigned" else owned - set(partitions)
        return owned

    def read(self) -> int:
        return sum(c["count"] for c in self.lines() if c["callback"] == "records")

    def stop(self) -> None:
        self.stop_file.touch()
        assert self.process.wait(timeout=60) == 0, self.stderr.read_text()[-3000:]

    def agent_lines(self) -> list[str]:
        return [line for line in self.stderr.read_text().splitlines() if line.startswith("rebalance-lens javaagent")]


def _until(condition: Callable[[], bool], what: str, members: list[Member], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for member in members:
            assert member.process.poll() is None, f"{member.stdout.stem} exited: {member.stderr.read_text()[-3000:]}"
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _clean_env() -> dict[str, str]:
    """The environment without LENS_* variables: each test names the agent's options itself."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LENS_")}


@pytest.fixture(scope="module")
def app_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The app compiled once, and its classpath: kafka-clients and its own dependencies (no Jackson: the agent
    brings its own, relocated)."""
    ensure_agent_jar()
    assert JAVAAGENT.is_file(), "mvn package builds the javaagent jar beside the library's"
    classes = tmp_path_factory.mktemp("app")
    kafka_jars = ":".join(str(p) for p in sorted(LIB.glob("*.jar")) if not p.name.startswith("jackson-"))
    subprocess.run(["javac", "-cp", kafka_jars, "-d", str(classes), str(APP)], check=True, timeout=300)
    return f"{classes}:{kafka_jars}"


@pytest.fixture
def app(kafka, unique: str, tmp_path: Path, app_classpath: str) -> Callable[..., Member]:
    """Start a member of this test's group on a seeded topic: app(name, protocol, jvm_options, env_extra)."""
    topic = kafka.create_topic(f"javaagent-{unique}", partitions=PARTITIONS)
    kafka.seed_partitions(topic, PARTITIONS, PER_PARTITION)

    def start(name: str, protocol: str, jvm: list[str], env: dict[str, str] | None = None) -> Member:
        args = [kafka.bootstrap_servers, topic, f"javaagent-{unique}", protocol]
        return Member(tmp_path, name, app_classpath, args, jvm, {**_clean_env(), **(env or {})})
    return start


def _rebalance(app: Callable[..., Member], protocol: str, telemetry: str) -> tuple[Member, Member]:
    """a alone reads everything, b joins, b leaves, a closes: a configured by a property, b by the environment."""
    agent = [f"-javaagent:{JAVAAGENT}", "-Dlens.progress.interval.ms=500"]
    a = app("a", protocol, [*agent, f"-Dlens.telemetry.topic={telemetry}"])
    _until(lambda: a.owned() == ALL and a.read() == PARTITIONS * PER_PARTITION, "a owns and read everything", [a])
    b = app("b", protocol, agent, {"LENS_TELEMETRY_TOPIC": telemetry})
    _until(lambda: a.owned() and b.owned() and a.owned() | b.owned() == ALL and not a.owned() & b.owned(),
           "a and b share the partitions", [a, b])
    b.stop()
    _until(lambda: a.owned() == ALL, "a owns everything again", [a])
    a.stop()
    assert a.agent_lines() == b.agent_lines() == []  # the agent started without a word
    return a, b


def _telemetry(kafka, telemetry: str, members: tuple[Member, ...]) -> TelemetryLog:
    """The telemetry topic read back (every event validated against the v1 schema) once every member closed."""
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    try:
        pids = {m.process.pid for m in members}
        log.wait_for(lambda lg: {e["pid"] for e in lg.events if e["kind"] == "state_transition"
                                 and e["body"]["reason"] == "close"} == pids, timeout=60, what="every member's close")
    finally:
        log.close()
    return log


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_an_application_that_knows_nothing_of_the_agent_is_measured(kafka, unique, app, protocol):
    telemetry = f"javaagent-telemetry-{unique}"
    a, b = _rebalance(app, protocol, telemetry)
    log = _telemetry(kafka, telemetry, (a, b))
    agent_of = {e["pid"]: e["agent_id"] for e in log.events}
    assert set(agent_of) == {a.process.pid, b.process.pid} and len(set(agent_of.values())) == 2
    for member in (a, b):
        agent_id = agent_of[member.process.pid]
        reported = [(e["kind"].removeprefix("partitions_"), sorted(p["partition"] for p in e["body"]["partitions"]))
                    for e in log.of(agent_id, "partitions_assigned", "partitions_revoked", "partitions_lost")]
        assert reported == member.listener_calls(), member.stdout.stem
        seqs = [e["seq"] for e in log.of(agent_id)]
        assert seqs == list(range(len(seqs)))
        config = log.of(agent_id, "member_config")[0]
        assert config["group_protocol"] == protocol and config["group_id"] == f"javaagent-{unique}"
        assert config["body"]["client_version"].startswith("kafka-clients 4.2")
        assert not any(k.startswith("lens.") for k in config["body"]["config"])
    # a's no-argument commitSync()s reached the telemetry with the offsets the client committed (the agent's
    # commit witness is in the app's KafkaConsumer): at the end, every partition at its end offset.
    committed: dict[int, int] = {}
    for commit in log.of(agent_of[a.process.pid], "commit"):
        assert commit["body"]["sync"] and commit["body"]["error"] is None
        committed.update({o["partition"]: o["offset"] for o in commit["body"]["offsets"]})
    assert committed == {p: PER_PARTITION for p in ALL}


@pytest.mark.parametrize("options, env, key", [
    (["-Dlens.processing=explicit"], {"LENS_TELEMETRY_TOPIC": "never-written"}, "lens.processing=explicit"),
    (["-Dlens.telemetry.topic=never-written", "-Dlens.progres.interval.ms=500"], {}, "lens.progres.interval.ms"),
    ([], {}, "lens.telemetry.topic"),
])
def test_a_bad_agent_option_prints_one_line_and_the_application_runs_without_the_agent(kafka, app, options, env,
                                                                                         key):
    member = app("bad", "classic", [f"-javaagent:{JAVAAGENT}", *options], env)
    _until(lambda: member.owned() == ALL and member.read() == PARTITIONS * PER_PARTITION,
           "the app reads everything", [member])
    member.stop()
    lines = member.agent_lines()
    assert len(lines) == 1 and key in lines[0] and lines[0].endswith("the application runs without it."), lines
    assert "never-written" not in kafka.admin().list_topics(timeout=10).topics  # nothing was instrumented


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the stages up to gold on a loaded 2-core machine took over the default 600 s
def test_an_unmodified_java_applications_group_is_measured_end_to_end(kafka, spark, unique, app, tmp_path):
    """The group's telemetry through the stages up to gold: gold's handoffs, partition by partition, are the owners
    the app's own listeners printed, in order (``./lens test -m slow tests/jvm_agent/test_javaagent.py``). No record
    is fetched after a handoff here (a read the topic to its end first), so gold has no duplicates or pause to
    compare: those wait for Java members in the scenarios (issue 40)."""
    telemetry = f"javaagent-e2e-{unique}"
    members = _rebalance(app, "classic", telemetry)
    agent_of = {e["pid"]: e["agent_id"] for e in _telemetry(kafka, telemetry, members).events}
    config = PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, topic=telemetry,
                            lake_path=str(tmp_path / "lake"), **embedded_broker_groups())
    run_pipeline(spark, config, stages=("ingest", "validate", "silver", "gold"), progress=lambda _m: None)
    handoffs = sorted((r.asDict() for r in lake.read(spark, config.lake_path, catalog.HANDOFFS).collect()),
                      key=lambda h: (h["partition"], h["assigned_ms"]))

    assigned = sorted((call["at_ms"], p, agent_of[m.process.pid]) for m in members for call in m.lines()
                      if call["callback"] == "assigned" for p in call["partitions"])
    owners_in_app = {p: [agent for _at, q, agent in assigned if q == p] for p in ALL}
    owners_in_gold: dict[int, list[str]] = {}
    for h in handoffs:
        owners_in_gold.setdefault(h["partition"], [h["prev_agent_id"]]).append(h["next_agent_id"])
    assert owners_in_gold == owners_in_app
    assert all(h["group_id"] == f"javaagent-{unique}" and h["release_kind"] == "revoked" for h in handoffs)
    # a's no-argument commitSync()s reached gold: a's first ownership of each partition (where it read and committed
    # everything) ends in a revoke that finds the partition committed to its end
    first = {p: next(h for h in handoffs if h["partition"] == p) for p in ALL}
    assert {p: (h["prev_agent_id"], h["committed_at_revoke"]) for p, h in first.items()} == {
        p: (agent_of[members[0].process.pid], PER_PARTITION) for p in ALL}
