"""The embedded broker: real produce/consume in both group protocols, clean start-up errors, nothing left behind."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lens_runtime.errors import LensError
from lens_runtime.kafka_broker import EmbeddedKafka, pid_alive


def consume_all(consumer, expected: int, timeout_s: float = 60.0) -> list:
    import time

    messages, deadline = [], time.monotonic() + timeout_s
    while len(messages) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        messages.append(msg)
    return messages


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_produce_and_consume_in_a_group(kafka, unique, protocol):
    topic = kafka.create_topic(f"roundtrip-{protocol}-{unique}", partitions=3)
    sent = [f"record-{i}" for i in range(300)]
    kafka.seed(topic, sent)
    consumer = kafka.consumer(f"group-{protocol}-{unique}", **{"group.protocol": protocol})
    consumer.subscribe([topic])
    try:
        got = consume_all(consumer, expected=len(sent))
        assert sorted(m.value().decode() for m in got) == sorted(sent)
        assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2}
        consumer.commit(asynchronous=False)
        next_offsets: dict[int, int] = {}
        for m in got:
            next_offsets[m.partition()] = max(next_offsets.get(m.partition(), 0), m.offset() + 1)
        committed = consumer.committed(consumer.assignment(), timeout=10)
        assert {tp.partition: tp.offset for tp in committed if tp.partition in next_offsets} == next_offsets
    finally:
        consumer.close()


def test_port_in_use_is_named():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(LensError, match=rf"Port {port} .* already in use"):
            EmbeddedKafka(port=port).start()


def test_start_timeout_names_the_log_and_leaves_nothing(tmp_path: Path):
    broker = EmbeddedKafka(workdir=tmp_path / "b", startup_timeout_s=0.05)
    with pytest.raises(LensError, match=r"did not answer .* Its log: .*broker.log") as err:
        broker.start()
    assert Path(str(err.value).rsplit("Its log: ", 1)[1]).is_file()
    assert broker.pid is None


def test_stop_removes_process_and_folder():
    broker = EmbeddedKafka().start()
    pid, workdir = broker.pid, broker.workdir
    assert pid_alive(pid) and workdir.is_dir()
    broker.stop()
    assert not pid_alive(pid)
    assert not workdir.exists()


def test_missing_java_is_named(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(LensError, match="Java was not found on PATH.*openjdk-17"):
        EmbeddedKafka().start()


def test_cli_kafka_up_status_down(tmp_path: Path):
    env = {**os.environ, "REBALANCE_LENS_HOME": str(tmp_path)}
    # The jars are shared: point the temporary home's jars at the real cache.
    from lens_runtime.jvm_deps import jars_dir

    (tmp_path / "jars").symlink_to(jars_dir())
    cli = [sys.executable, "-m", "lens_cli.main", "kafka"]
    up = subprocess.run([*cli, "up"], env=env, capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    assert "Kafka is up at 127.0.0.1:" in up.stdout
    try:
        status = subprocess.run([*cli, "status"], env=env, capture_output=True, text=True, timeout=30)
        assert status.returncode == 0 and "up at" in status.stdout
    finally:
        down = subprocess.run([*cli, "down"], env=env, capture_output=True, text=True, timeout=60)
    assert "Kafka stopped" in down.stdout
    status = subprocess.run([*cli, "status"], env=env, capture_output=True, text=True, timeout=30)
    assert status.returncode == 1 and "down" in status.stdout


def test_broker_dies_with_a_killed_parent(tmp_path: Path):
    """A parent killed with SIGKILL runs no clean-up; the kernel must still stop its broker."""
    import signal
    import time

    script = ("from lens_runtime.kafka_broker import EmbeddedKafka\n"
              "import time\n"
              "b = EmbeddedKafka().start()\n"
              "print(b.pid, flush=True)\n"
              "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    broker_pid = int(parent.stdout.readline())
    assert pid_alive(broker_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while pid_alive(broker_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(broker_pid)
