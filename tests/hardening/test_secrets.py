"""Secrets: the agent's telemetry producer authenticates on a SASL_PLAINTEXT listener, and the
password it used (and a planted ssl.key.password) appears in no output: not in the telemetry
topic, any lake table (SQL marts included), any file of the lake, the Spark log of the run, the
report, or any log line the agents made (librdkafka's debug logging on). A marker the agents do
emit (their client id) is found in each of those outputs that carries client ids: the search
works."""
from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
import pytest

from consumer_agent import InstrumentedConsumer
from lens_runtime.spark_session import spark_log
from pipelines import catalog, lake
from tests.support.secret_search import files_containing, tables_containing, topic_containing

# The shared hostile lake takes about 5 min to build: slow (./lens test -m slow tests/hardening).
pytestmark = pytest.mark.slow


def test_the_agents_sent_their_telemetry_through_the_sasl_listener(spark, world, kafka):
    events = lake.read(spark, world.config.lake_path, catalog.EVENTS)
    sent = {r.agent_id for r in events.where(events.group_id == world.secret.group).select("agent_id").distinct()
            .collect()}
    assert sent == set(world.secret.agent_ids)
    # the listener really checks the password: a client with another one gets nothing through
    refused: list[str] = []
    producer = Producer({**kafka.sasl.client_config(password="not-the-password"), "message.timeout.ms": 5000,
                         "error_cb": lambda err: refused.append(str(err)), "log_level": 0})
    producer.produce(world.config.topic, b"never")
    producer.flush(10)
    assert any("Authentication failed" in e for e in refused), refused


def test_no_secret_in_any_output(spark, world, kafka):
    lake_dir = Path(world.config.lake_path)
    outputs = {"Spark's log of the run": Path(spark_log(spark)), "report": world.report, "lake files": lake_dir}
    marker = world.secret.marker
    for secret in world.secret.secrets:
        assert topic_containing(kafka.bootstrap_servers, world.config.topic, secret) == 0
        assert tables_containing(spark, lake_dir, secret) == {}
        for name, where in outputs.items():
            assert files_containing(where, secret) == [], name
        assert not [line for line in world.secret.log_lines if secret in line]
    # the positive control: what the agents emit is found by the same searches
    assert topic_containing(kafka.bootstrap_servers, world.config.topic, marker) > 0
    tables = tables_containing(spark, lake_dir, marker)
    print(f"\nthe marker is in {len(tables)} tables: {sorted(tables)}; "
          f"{len(world.secret.log_lines)} log lines searched")
    assert {"bronze/telemetry_raw", "silver/events", "gold/members", "marts/agent_telemetry_quality",
            "marts/member_costs"} <= set(tables), tables
    assert files_containing(world.report, marker)
    assert len(world.secret.log_lines) > 50  # librdkafka's debug lines of the telemetry producer were searched


def test_a_wrong_telemetry_password_costs_telemetry_not_the_host(kafka, caplog):
    """The host authenticates; only the telemetry producer's password is wrong: the host reads
    everything, the agent counts its errors, and the wrong password is in no log line."""
    wrong = f"wrong-{uuid.uuid4().hex}"
    source = kafka.create_topic(f"wrongpw-{uuid.uuid4().hex[:6]}", partitions=1)
    kafka.seed(source, (f"r-{i}" for i in range(200)))
    caplog.set_level(logging.DEBUG)
    consumer = InstrumentedConsumer({**kafka.sasl.client_config(), "group.id": f"wrongpw-{uuid.uuid4().hex[:6]}",
                                     "auto.offset.reset": "earliest", "lens.telemetry.topic": "never-written",
                                     "lens.telemetry.sasl.password": wrong, "lens.telemetry.debug": "security"})
    try:
        consumer.subscribe([source])
        seen, deadline = 0, time.monotonic() + 60
        while seen < 200 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            seen += msg is not None and not msg.error()
        assert seen == 200
        while consumer.telemetry_stats()["errors"] == 0 and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.telemetry_stats()["errors"] > 0
    finally:
        consumer.close()
    assert caplog.records and not [r for r in caplog.records if wrong in r.getMessage()]
