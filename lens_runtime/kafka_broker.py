"""An embedded single-node KRaft Kafka broker, started from the Maven Central jars.

One JVM runs ``kafka.Kafka`` as broker and controller on two free loopback ports.
``EmbeddedKafka`` formats a fresh storage folder, starts the process in its own
process group, waits until the broker answers a metadata request, and on
``stop()`` terminates the whole group and deletes the folder: nothing is left behind.

The broker is tuned for fast, realistic tests, not for durability:
- ``group.initial.rebalance.delay.ms=0`` so a classic group's first join is not delayed 3 s;
- KIP-848 groups (``group.protocol=consumer``) get a 10 s session timeout and a 1 s
  heartbeat (production defaults: 45 s and 5 s) so that a crashed member is noticed
  in scenario time; both are broker-side settings under KIP-848.

``sasl_users`` adds a second client listener, ``SASL_PLAINTEXT`` with the PLAIN mechanism and
those users (``sasl_bootstrap_servers``): the secured telemetry cluster a production agent
writes to, for the tests that plant a password and look for it everywhere. The PLAINTEXT
listener stays (the broker talks to itself over it). ``restart()`` stops the broker and starts
it again on the same ports and data: a broker that goes away in the middle of a read.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from lens_runtime.errors import LensError
from lens_runtime.jvm_deps import java_major_version, kafka_classpath
from lens_runtime.paths import home

LOG4J2 = Path(__file__).resolve().parent / "kafka-log4j2.properties"

FAST_TEST_SETTINGS: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "offsets.topic.num.partitions": "4",
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
}


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def _cluster_id() -> str:
    """Kafka's Uuid string form: URL-safe base64 of 16 random bytes, unpadded. It starts
    with '-' one time in 64: pass it as ``--cluster-id=ID``, or the tool takes it for an option."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass
class EmbeddedKafka:
    """A throwaway KRaft broker on loopback. Use as a context manager or call start()/stop()."""

    port: int | None = None
    controller_port: int | None = None
    workdir: Path | None = None
    startup_timeout_s: float = 90.0
    heap: str = "768m"
    overrides: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    die_with_parent: bool = True
    sasl_users: dict[str, str] | None = None  # user -> password of a SASL_PLAINTEXT (PLAIN) listener
    sasl_port: int | None = None
    kafka_version: str | None = None  # None: the pinned Kafka; another: its jars from jvm_deps.ensure_kafka_jars
    pid: int | None = None
    _owns_workdir: bool = field(default=False, repr=False)
    _proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_PLAINTEXT listener's address (only with ``sasl_users``)."""
        if not self.sasl_users or not self.sasl_port:
            raise LensError("this broker has no SASL listener: create it with sasl_users={user: password}")
        return f"{self.host}:{self.sasl_port}"

    @property
    def log_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "broker.log"

    def server_properties(self) -> dict[str, str]:
        assert self.workdir is not None and self.port and self.controller_port
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{self.host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            **FAST_TEST_SETTINGS,
        }
        if self.sasl_users:
            props.update(self._sasl_properties())
        props.update(self.overrides)
        return props

    def _sasl_properties(self) -> dict[str, str]:
        """A SASL_PLAINTEXT listener with PLAIN users (the broker's own JAAS entry lists them)."""
        assert self.sasl_users and self.sasl_port
        for user, password in self.sasl_users.items():
            if not (user.isidentifier() and password.isalnum()):
                raise LensError("sasl_users: names must be identifiers and passwords letters and digits "
                                "(they go into a JAAS line unquoted)")
        users = " ".join(f'user_{u}="{p}"' for u, p in self.sasl_users.items())
        return {
            "listeners": f"PLAINTEXT://{self.host}:{self.port},SASL_PLAINTEXT://{self.host}:{self.sasl_port},"
                         f"CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port},SASL_PLAINTEXT://{self.host}:{self.sasl_port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
        }

    def _java(self, main: str, *args: str, detach: bool) -> subprocess.Popen:
        cmd = [
            "java", f"-Xmx{self.heap}", "-Xms128m", "-XX:+UseG1GC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J2}",
            f"-Dkafka.logs.dir={self.workdir}", f"-Dlens.broker.log={self.log_path}",
            "-cp", kafka_classpath(self.kafka_version), main, *args,
        ]
        # PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process: a
        # broker (re)started from a short-lived thread was stopped as soon as that thread returned
        # (seen in tests/hardening/test_broker_restart.py's first version).
        # Off the main thread, stop() and the context manager remain the only clean-up.
        tie = self.die_with_parent and threading.current_thread() is threading.main_thread()
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=detach, cwd=self.workdir,
                                    preexec_fn=_die_with_parent if tie else None)
        finally:
            log.close()

    def start(self) -> "EmbeddedKafka":
        java_major_version()
        ports = (("port", self.port), ("controller_port", self.controller_port), ("sasl_port", self.sasl_port))
        for name, port in ports:
            if port and port_in_use(port, self.host):
                raise LensError(f"Port {port} ({name}) on {self.host} is already in use. Stop whatever holds it "
                                f"(`ss -ltnp 'sport = :{port}'` shows it) or leave the port unset to pick a free one.")
        self.port = self.port or free_port(self.host)
        self.controller_port = self.controller_port or free_port(self.host)
        if self.sasl_users:
            self.sasl_port = self.sasl_port or free_port(self.host)
        return self._launch()

    def restart(self, down_s: float = 0.0) -> "EmbeddedKafka":
        """Stop the broker (a controlled shutdown), stay down ``down_s`` seconds, start it again on
        the same ports and data. The ports are not checked: the stopped broker's connections may
        hold them in TIME_WAIT, which the JVM's listener (SO_REUSEADDR) binds through."""
        if self.pid is None:
            raise LensError("the broker is not running: start() it first")
        self.stop(keep_workdir=True)
        time.sleep(down_s)
        return self._launch(format_storage=False)

    def _launch(self, format_storage: bool = True) -> "EmbeddedKafka":
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="lens-kafka-"))
            self._owns_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        props_file = self.workdir / "server.properties"
        props_file.touch(mode=0o600)  # it may hold the SASL users' passwords
        props_file.write_text("".join(f"{k}={v}\n" for k, v in self.server_properties().items()))

        if format_storage:  # a restart keeps the storage, formatted under its cluster id
            fmt = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={_cluster_id()}", "-c",
                             str(props_file), "--ignore-formatted", detach=False)
            if fmt.wait(timeout=120) != 0:
                raise LensError(f"Formatting the Kafka storage failed; see {self.log_path}")
        self._proc = self._java("kafka.Kafka", str(props_file), detach=True)
        self.pid = self._proc.pid
        try:
            self._wait_ready()
        except BaseException:
            self.stop(keep_workdir=True)
            raise
        return self

    def _wait_ready(self) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + self.startup_timeout_s
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0,
                             "logger": _silent_logger()})
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise LensError(f"The Kafka broker exited with code {self._proc.returncode} during start-up. "
                                f"Its log: {self.log_path}")
            try:
                md = admin.list_topics(timeout=1.0)
                if md.brokers:
                    return
            except Exception:  # noqa: BLE001 - not up yet; retried until the deadline
                pass
            time.sleep(0.25)
        raise LensError(f"The Kafka broker did not answer on {self.bootstrap_servers} within "
                        f"{self.startup_timeout_s:.0f} s. Its log: {self.log_path}")

    def alive(self) -> bool:
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        if self._proc is not None:
            return self._proc.poll() is None
        return True

    def stop(self, timeout_s: float = 20.0, keep_workdir: bool = False) -> None:
        """SIGTERM the broker's process group (a controlled shutdown), SIGKILL it after ``timeout_s``."""
        if self.pid is not None:
            _terminate_group(self.pid, self._proc, timeout_s)
        self.pid = None
        self._proc = None
        if self._owns_workdir and not keep_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def state(self) -> dict:
        return {"pid": self.pid, "port": self.port, "controller_port": self.controller_port,
                "workdir": str(self.workdir), "owns_workdir": self._owns_workdir}

    @classmethod
    def from_state(cls, state: dict) -> "EmbeddedKafka":
        broker = cls(port=state["port"], controller_port=state["controller_port"], workdir=Path(state["workdir"]))
        broker.pid = state["pid"]
        broker._owns_workdir = state.get("owns_workdir", False)
        return broker

    def __enter__(self) -> "EmbeddedKafka":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (Linux PR_SET_PDEATHSIG).

    A test run or demo killed with SIGKILL cannot run its clean-up; this makes the
    kernel stop its broker anyway, so no JVM is left behind.
    """
    import ctypes

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except OSError:
        pass  # not Linux: stop() and the context manager remain the clean-up


def _terminate_group(pid: int, proc: subprocess.Popen | None, timeout_s: float) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                break
        elif not pid_alive(pid):
            break
        time.sleep(0.1)
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if proc is not None:
        proc.wait(timeout=10)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of someone else still "exists"; /proc tells us it is dead.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _silent_logger():
    """librdkafka logs connection refusals while the broker boots; they are expected, not news."""
    import logging

    logger = logging.getLogger("rebalance_lens.kafka_probe")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


class LocalKafkaState:
    """The CLI's ``kafka up|status|down``: one detached broker whose state is kept in a JSON file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file = root / "state.json"

    def load(self) -> EmbeddedKafka | None:
        if not self.file.is_file():
            return None
        return EmbeddedKafka.from_state(json.loads(self.file.read_text()))

    def up(self, port: int | None, timeout_s: float) -> EmbeddedKafka:
        running = self.load()
        if running is not None and running.alive():
            return running
        shutil.rmtree(self.root / "broker", ignore_errors=True)
        broker = EmbeddedKafka(port=port, workdir=self.root / "broker", startup_timeout_s=timeout_s,
                               die_with_parent=False)  # outlives the CLI call by design
        broker.start()
        self.root.mkdir(parents=True, exist_ok=True)
        self.file.write_text(json.dumps(broker.state()))
        return broker

    def down(self) -> bool:
        broker = self.load()
        if broker is None:
            return False
        broker.stop()
        shutil.rmtree(self.root / "broker", ignore_errors=True)
        self.file.unlink(missing_ok=True)
        return True


def local_state() -> LocalKafkaState:
    """The broker of ``rebalance-lens kafka up``, kept under the cache root."""
    return LocalKafkaState(home() / "kafka")
