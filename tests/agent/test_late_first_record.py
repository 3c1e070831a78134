"""A partition's first record handed out long after its assignment is still reported.

Outline: m1 reads offsets 0..9 of a one-partition topic, commits 5 and closes (a graceful
handoff leaving 5 duplicates). m2 is assigned the partition but hands nothing out for
longer than the agent watches record by record (a fetch queue filled by a backlogged hot
partition does this; here the application pauses the partition), then resumes. The agent
must report that first record with ``seen = false``: its offset (the group's committed
offset, asked off the application thread) and the tick window it fell in; gold must give
the exact duplicates and pause bounds that contain the real first delivery.

The default suite shortens the watch to 2 s; the slow suite runs the agent's real 30 s
watch with a 45 s delay.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition

from consumer_agent import InstrumentedConsumer, progress
from tests.support.reference_ownership import gold_of_group
from tests.support.telemetry_log import TelemetryLog


def _poll_until(consumer: InstrumentedConsumer, condition, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if condition(msg):
            return msg
    raise AssertionError("timed out polling")


def _late_first_record(kafka, unique: str, delay_s: float) -> None:
    topic = kafka.create_topic(f"agent-late-{unique}", partitions=1)
    kafka.seed(topic, (f"r-{i}" for i in range(20)), partition=0)
    telemetry = f"telemetry-late-{unique}"
    config = kafka.consumer_config(f"g-{unique}", **{
        "enable.auto.commit": False, "lens.telemetry.topic": telemetry, "lens.progress.interval.ms": 1000,
        "partition.assignment.strategy": "range", "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    m1 = InstrumentedConsumer(config)
    try:
        m1.subscribe([topic])
        _poll_until(m1, lambda msg: msg is not None and not msg.error() and msg.offset() == 9)
        m1.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    finally:
        m1.close()
    m2 = InstrumentedConsumer(config)
    try:
        assigned: list[float] = []

        def on_assign(consumer, partitions):
            consumer.assign(partitions)  # (else the client assigns after the callback, undoing the pause)
            consumer.pause(partitions)  # nothing is handed out until the application resumes
            assigned.append(time.monotonic())

        m2.subscribe([topic], on_assign=on_assign)
        _poll_until(m2, lambda _msg: bool(assigned))
        _poll_until(m2, lambda _msg: time.monotonic() - assigned[0] > delay_s, delay_s + 10)
        m2.resume([TopicPartition(topic, 0)])
        first = _poll_until(m2, lambda msg: msg is not None and not msg.error())
        first_ms = time.time_ns() // 1_000_000
        assert first.offset() == 5
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not log.of(m2.agent_id, "first_fetch"):
            m2.poll(0.2)
            log.refresh(0.1)
        [found] = log.wait_for(lambda lg: lg.of(m2.agent_id, "first_fetch"), 10, "m2's first_fetch")
        body = found["body"]
        assert (body["seen"], body["offset"], body["timestamp_ms"]) == (False, 5, None)
        assert body["since_assign_ms"] >= delay_s * 1000
        assert found["event_time_ms"] - body["window_ms"] <= first_ms <= found["event_time_ms"] + 50
    finally:
        m2.close()
    events = log.wait_for(lambda lg: (lg.of(m1.agent_id) + lg.of(m2.agent_id)
                                      if lg.of(m2.agent_id, "partitions_revoked") else None), 30, "m2's close")
    log.close()
    _, handoffs, _, _ = gold_of_group(events, gap_s=10.0)
    [h] = [h for h in handoffs if h["prev_agent_id"] == m1.agent_id and h["next_agent_id"] == m2.agent_id]
    revoke_ms = h["revoke_ms"]
    assert (h["duplicates"], h["duplicates_upper"]) == (5, 5)  # m1 processed 0..9 and committed 5
    truth_s = (first_ms - revoke_ms) / 1000
    assert h["pause_s"] - 0.05 <= truth_s <= h["pause_upper_s"] + 0.05, (h, truth_s)


def test_a_first_record_after_the_watch_is_reported_with_its_offset(kafka, unique, monkeypatch):
    monkeypatch.setattr(progress, "FIRST_FETCH_WATCH_S", 2.0)
    _late_first_record(kafka, unique, delay_s=4.0)


@pytest.mark.slow
def test_a_first_record_45_s_after_the_assignment_is_reported(kafka, unique):
    _late_first_record(kafka, unique, delay_s=45.0)
