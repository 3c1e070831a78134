"""Lost partitions: a member that stalls past max.poll.interval.ms.

Outline: the member reads its records, then its application stalls longer than
max.poll.interval.ms. On the next poll the agent must report the client error, the move
to the protocol's stale state (unless librdkafka served the lost callback first), and a
partitions_lost event with the partitions and their offsets (no commit-on-revoke on lost
partitions); the application's on_revoke receives them, as confluent-kafka does when no
on_lost is given; then the member rejoins. The poll
that returns the error must not report progress for the partitions the group already took,
and gold's bounds on the lost handoffs' pause (the stall to the first record read again) are
ordered and contain it.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError

from consumer_agent import InstrumentedConsumer
from tests.support.reference_ownership import gold_of_group
from tests.support.members import PROTOCOLS
from tests.support.telemetry_log import TelemetryLog, partitions_of

STALL = {"consumer": {"max.poll.interval.ms": 3000}, "cooperative-sticky": {"max.poll.interval.ms": 6000}}


@pytest.mark.parametrize("protocol", list(STALL))
def test_poll_stall_reports_stale_state_and_lost_partitions(kafka, unique, protocol):
    app_stats: list[str] = []
    app_commits: list[object] = []
    topic = kafka.create_topic(f"agent-lost-{unique}", partitions=2)
    for partition in (0, 1):  # both partitions hold records, so both have a known position when lost
        kafka.seed(topic, (f"r-{partition}-{i}" for i in range(10)), partition=partition)
    telemetry = f"telemetry-lost-{unique}"
    consumer = InstrumentedConsumer(kafka.consumer_config(f"g-{unique}", **PROTOCOLS[protocol], **STALL[protocol], **{
        "enable.auto.commit": False, "lens.telemetry.topic": telemetry, "lens.commit.on.revoke": True,
        "lens.progress.interval.ms": 500, "statistics.interval.ms": 1000,
        "stats_cb": lambda stats: app_stats.append(stats), "on_commit": lambda err, parts: app_commits.append(err)}))
    app_revoked: list[set[int]] = []
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    try:
        consumer.subscribe([topic], on_revoke=lambda c, parts: app_revoked.append({p.partition for p in parts}))
        seen, deadline = 0, time.monotonic() + 30
        while seen < 20 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            seen += msg is not None and not msg.error()
        assert seen == 20
        consumer.commit(asynchronous=True)  # reported through on_commit, which the app still receives
        deadline = time.monotonic() + 10
        while not app_commits and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert app_commits == [None]
        for partition in (0, 1):  # to read again after the stall
            kafka.seed(topic, (f"r-{partition}-{i}" for i in range(10, 15)), partition=partition)
        stall_ms = time.time_ns() // 1_000_000
        time.sleep(STALL[protocol]["max.poll.interval.ms"] / 1000 + 2.5)  # the application stalls
        errors, read_again, deadline = [], 0, time.monotonic() + 30
        while time.monotonic() < deadline and not (errors and app_revoked and consumer.assignment()):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error():
                errors.append(msg.error().code())
            read_again += msg is not None and not msg.error()
        assert KafkaError._MAX_POLL_EXCEEDED in errors
        assert app_revoked == [{0, 1}]  # lost partitions reach on_revoke when no on_lost is given

        def lost_and_back(lg: TelemetryLog):
            lost = lg.of(consumer.agent_id, "partitions_lost")
            back = [e for e in lg.of(consumer.agent_id, "partitions_assigned") if lost and e["seq"] > lost[0]["seq"]]
            return lost and back and (lost, back)
        lost, back = log.wait_for(lost_and_back, 30, "lost, then assigned again")
        body = lost[0]["body"]
        assert partitions_of(lost[0]) == {0, 1} and body["commit_on_revoke"] is None
        assert sum(p["position"] for p in body["partitions"]) == 20
        assert all(p["last_processed_offset"] == p["position"] - 1 for p in body["partitions"] if p["position"] > 0)
        errors_seen = [e["body"]["code"] for e in log.of(consumer.agent_id, "client_error")]
        assert KafkaError._MAX_POLL_EXCEEDED in errors_seen
        transitions = [(e["body"]["to_state"], e["body"]["reason"])
                       for e in log.of(consumer.agent_id, "state_transition")]
        error_seq = next(e["seq"] for e in log.of(consumer.agent_id, "client_error"))
        # stale until the lost callback when the error came first; when librdkafka served the lost callback
        # (and maybe the rejoin) first, the member was never stale (tests/agent/test_stall_order.py)
        stale = ("stale", "max.poll.interval.ms exceeded") in transitions
        assert stale == (error_seq < lost[0]["seq"]), transitions
        assert all(e["body"]["allowed"] for e in log.of(consumer.agent_id, "state_transition")), transitions
        commits = [e["body"] for e in log.of(consumer.agent_id, "commit")]
        assert not [c for c in commits if c["in_revoke"]]  # never on lost partitions
        assert [(c["mode"], c["sync"], sorted(o["offset"] for o in c["offsets"])) for c in commits] == \
            [("manual", False, sorted(p["position"] for p in body["partitions"]))]
        assert not [e for e in log.of(consumer.agent_id, "progress") if error_seq < e["seq"] < lost[0]["seq"]
                    and e["body"]["partitions"]], "progress for partitions the group had taken"
        deadline = time.monotonic() + 30
        while read_again < 10 and time.monotonic() < deadline:  # the 5 records per partition seeded before the stall
            msg = consumer.poll(0.2)
            read_again += msg is not None and not msg.error()
        log.wait_for(lambda lg: len([e for e in lg.of(consumer.agent_id, "first_fetch")
                                     if e["seq"] > back[0]["seq"]]) == 2, 30, "both partitions read again")
        _, handoffs, _, _ = gold_of_group(log.of(consumer.agent_id), gap_s=10.0)
        lost_handoffs = [h for h in handoffs if h["release_kind"] == "lost"]
        assert len(lost_handoffs) == 2
        for h in lost_handoffs:
            truth = (h["first_fetch_ms"] - stall_ms) / 1000  # not consumed from the stall to the first record again
            assert 0 <= h["pause_s"] <= truth <= h["pause_upper_s"], (h, truth)
        assert app_stats  # the application's stats_cb is chained
        stats = [e["body"] for e in log.of(consumer.agent_id, "client_stats")]
        assert stats and max(s["rebalance_cnt"] for s in stats) >= 1
    finally:
        consumer.close()
        log.close()
