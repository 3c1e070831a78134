"""Secrets: the agent's telemetry producer authenticates on a SASL_PLAINTEXT listener, and the
password it used (and a planted ssl.key.password) appears in no output: not in the telemetry
topic, any lake table (SQL marts included), any file of the lake, the Spark log of the run, the
report, or any log line the agents made (librdkafka's debug logging on). A marker the agents do
emit (their client id) is found in each of those outputs that carries client ids: the search
works. And both agents, Python and Java, keep the secrets their clients take in a consumer config
out of the telemetry (the agent spec's secrets: one list for both)."""
from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
import pytest

from consumer_agent import InstrumentedConsumer
from consumer_agent.redaction import REDACTED
from lens_runtime.spark_session import spark_log
from pipelines import catalog, lake
from tests.support import conformance
from tests.support.secret_search import files_containing, tables_containing, topic_containing

# The shared hostile lake takes about 5 min to build: its tests are slow (./lens test -m slow tests/hardening).
slow = pytest.mark.slow


def test_neither_agent_sends_a_secret_of_its_config(kafka, unique, tmp_path):
    """The secrets each client takes in a consumer config, the Java client's map carrying the Schema
    Registry deserializers' settings too (basic.auth.user.info, a registry URL with userinfo): in no
    telemetry record of either agent; their names and the client id (the positive control) are there."""
    secrets = {name: f"{name}-{uuid.uuid4().hex}" for name in ("ssl", "sasl", "jaas", "registry", "userinfo")}
    marker = f"secret-marker-{unique}"
    topic = kafka.create_topic(f"secrets-{unique}")
    common = {"bootstrap.servers": kafka.bootstrap_servers, "client.id": marker, "enable.auto.commit": "false",
              "ssl.key.password": secrets["ssl"], "lens.progress.interval.ms": "600000"}
    java = {"sasl.jaas.config": f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
                                f'password="{secrets["jaas"]}";',
            "basic.auth.user.info": f"u:{secrets['registry']}",
            "schema.registry.url": f"https://u:{secrets['userinfo']}@registry:8081"}
    program = {"topics": {"t1": topic}, "config": {"common": common, "python": {"sasl.password": secrets["sasl"]},
                                                   "java": java},
               "steps": [{"do": "subscribe", "topics": ["t1"]}, {"do": "read", "records": 0}, {"do": "close"}]}
    telemetry = kafka.create_topic(f"secrets-telemetry-{unique}")
    python, java_events = conformance.play_both(kafka, tmp_path, {"python": program, "java": program}, telemetry,
                                                unique)
    for secret in secrets.values():
        assert topic_containing(kafka.bootstrap_servers, telemetry, secret) == 0
    assert topic_containing(kafka.bootstrap_servers, telemetry, marker) == len(python) + len(java_events)
    snapshot = next(e for e in java_events if e["kind"] == "member_config")["body"]["config"]
    assert snapshot["basic.auth.user.info"] == snapshot["sasl.jaas.config"] == REDACTED
    assert snapshot["schema.registry.url"] == f"https://{REDACTED}@registry:8081"
    assert next(e for e in python if e["kind"] == "member_config")["body"]["config"]["sasl.password"] == REDACTED


@slow
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


@slow
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


@slow
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
