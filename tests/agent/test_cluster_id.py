"""Every event names the consumer's cluster (``cluster_id``), the first ones too: the emitter asks
the consumer's cluster in the background and holds events until it answers, also when the
telemetry goes to another cluster; a consumer whose cluster does not answer still sends, without
it, once the wait is over."""
from __future__ import annotations

import time

from consumer_agent import InstrumentedConsumer, emitter
from tests.support.telemetry_log import TelemetryLog


def test_every_event_carries_the_consumers_cluster_id(kafka, unique):
    topic = kafka.create_topic(f"agent-cluster-{unique}")
    telemetry = f"telemetry-cluster-{unique}"
    admin = kafka.admin()  # kept: its future fails if the handle is collected
    cluster_id = admin.describe_cluster(request_timeout=30).result(timeout=30).cluster_id
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    consumer = InstrumentedConsumer(kafka.consumer_config(f"g-{unique}", **{"lens.telemetry.topic": telemetry}))
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
    finally:
        consumer.close()
    log.wait_for(lambda lg: any(e["kind"] == "partitions_assigned" for e in lg.events), 30, "the assignment")
    log.close()
    assert log.events[0]["kind"] == "member_config"  # sent at subscribe, before the cluster could answer
    assert {e.get("cluster_id") for e in log.events} == {cluster_id}


def test_a_consumer_whose_cluster_does_not_answer_sends_without_it_after_the_wait(kafka, unique, monkeypatch):
    monkeypatch.setattr(emitter, "CLUSTER_ID_WAIT_S", 1.0)
    telemetry = f"telemetry-nocluster-{unique}"
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    consumer = InstrumentedConsumer({"bootstrap.servers": "127.0.0.1:9", "group.id": f"g-{unique}",
                                     "lens.telemetry.topic": telemetry,
                                     "lens.telemetry.bootstrap.servers": kafka.bootstrap_servers})
    try:
        consumer.subscribe([f"t-{unique}"])
        started = time.monotonic()
        log.wait_for(lambda lg: lg.events, 30, "the member_config")
        assert time.monotonic() - started < 15
        consumer.poll(0.1)
    finally:
        consumer.close()
        log.close()
    assert all("cluster_id" not in e for e in log.events)
