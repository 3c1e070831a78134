"""The framework applications the Java agent is tested in (tests/jvm_agent/apps/) and its kafka-clients matrix.

Each application is a real one built from Maven Central that knows nothing of rebalance-lens and is a scenario
member by the fleet's protocol (lens_scenarios/fleet.py): started with the member's spec as its argument, it writes
the members' truth log (lens_scenarios/truth_log.py), so ``GroundTruth`` judges it as any member. ``command`` runs
one as a user would, ``java -jar app.jar`` (the plain app from a flat class path, ``java -cp``), with
``-javaagent:`` the only addition when asked.

Built by ``ensure_built`` with one Maven run of the apps' reactor, only when a source or pom is newer than the jars,
and offline once a first build fetched the plugins and dependencies. The matrix's kafka-clients versions are
resolved once each (``mvn dependency:build-classpath``) into a class-path file that later runs read without Maven.
"""
from __future__ import annotations

import json
import subprocess
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from lens_runtime.errors import LensError
from lens_runtime.jvm_agent_build import built_after
from lens_runtime.jvm_deps import artifact_name, maven
from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.java_member import TRUTH_WRITER

APPS = Path(__file__).resolve().parents[1] / "jvm_agent" / "apps"
MATRIX_POM = APPS / "kafka-clients-matrix" / "pom.xml"
# The kafka-clients versions the agent is run against: the oldest it supports, the last without a ConsumerDelegate,
# what Spring Boot 3.5 brings, and every 4.x line to the newest; and one older than the range, which it refuses.
KAFKA_CLIENTS_MATRIX = ("3.5.2", "3.6.2", "3.9.1", "4.0.2", "4.1.2", "4.2.0", "4.3.1", "4.4.0")
UNSUPPORTED_KAFKA_CLIENTS = "3.1.2"
# run_alone's topic: ids 0..PARTITIONS * PER_PARTITION - 1, id i in partition i % PARTITIONS
PARTITIONS = 4
PER_PARTITION = 50
# A light JVM, as the scenario members run (lens_scenarios/java_member.py).
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m")


@dataclass(frozen=True)
class App:
    """One application: its Maven module under apps/, its runnable jar and the kafka-clients its build brings."""

    module: str
    jar_name: str
    kafka_clients: str
    main_class: str

    @property
    def jar(self) -> Path:
        return APPS / self.module / "target" / self.jar_name

    def kafka_clients_in_build(self) -> str:
        """The kafka-clients version the built application carries (checks its BOM's or pom's choice)."""
        if (lib := self.jar.parent / "lib").is_dir():
            names = [p.name for p in lib.glob("kafka-clients-*.jar")]
        else:
            with zipfile.ZipFile(self.jar) as jar:
                names = [Path(n).name for n in jar.namelist() if Path(n).name.startswith("kafka-clients-")]
        assert len(names) == 1, names
        return names[0].removeprefix("kafka-clients-").removesuffix(".jar")


PLAIN = App("plain-autocommit", "plain-autocommit.jar", "3.5.2", "io.rebalancelens.testapps.plain.PlainAutoCommitApp")
STREAMS = App("kafka-streams", "kafka-streams.jar", "4.2.0", "io.rebalancelens.testapps.streams.StreamsApp")
BOOT3 = App("spring-kafka/boot3", "spring-kafka-boot3.jar", "3.9.1", "io.rebalancelens.testapps.spring.SpringKafkaApp")
BOOT4 = App("spring-kafka/boot4", "spring-kafka-boot4.jar", "4.1.2", "io.rebalancelens.testapps.spring.SpringKafkaApp")
ALL = (PLAIN, STREAMS, BOOT3, BOOT4)


def _sources() -> list[Path]:
    """The applications' sources and poms, and the Java members' truth writer the member kit compiles in."""
    return [*(p for p in APPS.rglob("*") if p.is_file() and "target" not in p.relative_to(APPS).parts),
            TRUTH_WRITER]


def ensure_built() -> None:
    """Build every application unless all are current: offline when a build ran before, online if that fails."""
    if built_after((app.jar for app in ALL), _sources()):
        return
    if any((APPS / app.module / "target").is_dir() for app in ALL):
        try:
            maven(APPS / "pom.xml", "-o", "clean", "package")
            return
        except LensError:
            pass  # a dependency this build has not fetched yet
    maven(APPS / "pom.xml", "clean", "package")


def kafka_clients_classpath(version: str) -> list[Path]:
    """kafka-clients ``version`` and its runtime dependencies (from Maven's local repository; fetched once)."""
    listing = MATRIX_POM.parent / "target" / f"classpath-{version}.txt"
    if not listing.is_file() or not all(Path(p).is_file() for p in listing.read_text().split(":")):
        listing.parent.mkdir(parents=True, exist_ok=True)
        maven(MATRIX_POM, f"-Dkafka-clients.version={version}", "dependency:build-classpath",
              f"-Dmdep.outputFile={listing}")
    return [Path(p) for p in listing.read_text().strip().split(":")]


def plain_classpath(kafka_clients: str) -> str:
    """The plain application's class path with kafka-clients ``kafka-clients`` in place of the one it was built with."""
    client = kafka_clients_classpath(kafka_clients)
    replaced = {artifact_name(j) for j in client}
    own = [j for j in sorted((PLAIN.jar.parent / "lib").glob("*.jar")) if artifact_name(j) not in replaced]
    return ":".join(str(p) for p in (PLAIN.jar, *own, *client))


def spec(run_dir: Path, process: str, topics: list[str], config: dict[str, Any], processing_ms: float = 0.0,
         app: dict[str, str] | None = None, member: str | None = None) -> str:
    """A member's spec (the shape lens_scenarios/runner.py gives its members) with the application's own settings."""
    return json.dumps({"run_dir": str(run_dir), "member": member or process.split(".")[0], "process": process,
                       "agent": True, "topics": topics, "subscribe": topics, "config": config,
                       "processing_ms": processing_ms, "app": app or {}})


def app_command(app: App, kafka_clients: str | None = None) -> list[str]:
    """``java`` running ``app`` as users run it, but for its member spec: the plain application from a class path, on
    ``kafka_clients`` (default: its own), the others as ``java -jar``."""
    if app is PLAIN:
        classpath = plain_classpath(kafka_clients or PLAIN.kafka_clients)
        return ["java", *JVM_FLAGS, "-cp", classpath, app.main_class]
    if kafka_clients is not None:
        raise ValueError(f"only the plain application runs on another kafka-clients, not {app.module}")
    return ["java", *JVM_FLAGS, "-jar", str(app.jar)]


def command(app: App, member_spec: str, javaagent: Path | None = None, jvm: tuple[str, ...] = (),
            kafka_clients: str | None = None) -> list[str]:
    """``app_command`` running one member with ``member_spec``; ``-javaagent:`` (and ``jvm``, the agent's -D options)
    the only additions when ``javaagent`` is given."""
    java, *rest = app_command(app, kafka_clients)
    agent = (f"-javaagent:{javaagent}",) if javaagent else ()
    return [java, *jvm, *agent, *rest, member_spec]


class Running:
    """One application process as a member: what its stdout reports, and the fleet's commands to stop it."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.log = log
        self.delivered = 0
        self.assigned = 0
        self.lines: list[dict[str, Any]] = []
        with log.open("w") as err:
            self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                          bufsize=1)
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            if line.startswith("{"):
                msg = json.loads(line)
                self.lines.append(msg)
                self.delivered = msg.get("delivered", self.delivered)
                self.assigned = msg.get("assigned", self.assigned)

    def wait_until(self, condition: Callable[["Running"], bool], what: str, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition(self):
            if self.popen.poll() is not None:
                raise AssertionError(f"the application exited ({self.popen.returncode}) before {what}:\n"
                                     f"{self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                self.popen.kill()
                raise AssertionError(f"timed out waiting for {what}:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.1)

    def stop(self, timeout_s: float = 60) -> int:
        """As the runner ends a run: quiesce, then stop; the exit code."""
        assert self.popen.stdin is not None
        for cmd in ("quiesce", "stop"):
            self.popen.stdin.write(json.dumps({"cmd": cmd}) + "\n")
            self.popen.stdin.flush()
        try:
            return self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            raise

    def agent_lines(self) -> list[str]:
        """What the javaagent printed (one line per reason it stood aside)."""
        return [line for line in self.log.read_text().splitlines() if line.startswith("rebalance-lens javaagent")]


def run_alone(kafka, unique: str, run_dir: Path, app: App, settings: dict[str, str] | None = None,
              config: dict[str, Any] | None = None, **command_options: Any) -> Running:
    """``app`` as the only member of group ``apps-<unique>`` on a new topic of ids (as the scenarios' feeder writes
    them), until it processed every record and stopped; ``config``: client settings besides the group's,
    ``command_options`` go to ``command``."""
    topic = kafka.create_topic(f"apps-{unique}", partitions=PARTITIONS)
    producer = kafka.producer()
    for i in range(PARTITIONS * PER_PARTITION):
        producer.produce(topic, value=str(i), partition=i % PARTITIONS)
    producer.flush(30)
    config = {"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"apps-{unique}",
              "client.id": f"apps-{unique}", "auto.offset.reset": "earliest", **(config or {})}
    member_spec = spec(run_dir, "m1.1", [topic], config, processing_ms=1, app=settings)
    member = Running(command(app, member_spec, **command_options), run_dir / "m1.1.log")
    member.wait_until(lambda m: m.delivered == PARTITIONS * PER_PARTITION, "every record processed")
    assert member.stop() == 0, member.log.read_text()[-3000:]
    return member


def committed(kafka, unique: str, truth: GroundTruth) -> dict[int, int]:
    """What group ``apps-<unique>`` committed on the topic ``truth``'s member read."""
    topic = truth.processes[0].topics[0]
    reader = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"apps-{unique}"})
    try:
        offsets = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        reader.close()
    return {tp.partition: tp.offset for tp in offsets}
