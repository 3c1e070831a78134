"""The framework applications of tests/jvm_agent/apps/ are what the agent's end-to-end tests need them to be: real
applications, each built with the kafka-clients its framework brings, each a member whose truth log records every
record it was handed and every callback, and each committing what it processed in its own way (auto commits, Streams'
commits, Spring's container or the listener's acknowledgements). No agent here: tests/jvm_agent/test_javaagent*.py
add it."""
from __future__ import annotations

import pytest

from lens_scenarios.ground_truth import GroundTruth
from tests.support import framework_apps
from tests.support.framework_apps import BOOT3, BOOT4, PARTITIONS, PER_PARTITION, PLAIN, STREAMS, committed, run_alone


def test_each_application_is_built_with_the_kafka_clients_its_framework_brings(built):
    assert {app.module: app.kafka_clients_in_build() for app in framework_apps.ALL} == {
        app.module: app.kafka_clients for app in framework_apps.ALL}


@pytest.mark.parametrize("app, settings", [
    (PLAIN, {}),
    (STREAMS, {"streams.commit.interval.ms": "60000"}),  # no interval commit: its revoke and close commit
    (BOOT3, {"listener": "record", "ack-mode": "record"}),
    (BOOT3, {"listener": "batch", "ack-mode": "manual"}),
    (BOOT4, {"listener": "record", "ack-mode": "manual_immediate"}),
    (BOOT4, {"listener": "batch", "ack-mode": "batch"}),  # Spring refuses RECORD for a batch listener
], ids=["plain-autocommit", "streams", "boot3-record-container", "boot3-batch-manual", "boot4-record-manual",
        "boot4-batch-container"])
def test_an_application_keeps_the_members_truth_and_commits_what_it_processed(kafka, unique, tmp_path, built, app,
                                                                              settings):
    run_alone(kafka, unique, tmp_path, app, settings)
    truth = GroundTruth.load(tmp_path)
    assert sorted(d.record_id for d in truth.deliveries) == list(range(PARTITIONS * PER_PARTITION))
    assert {(d.partition, d.record_id % PARTITIONS) for d in truth.deliveries} == {(p, p) for p in range(PARTITIONS)}
    kinds = [(e.kind, len(e.partitions)) for e in sorted(truth.events, key=lambda e: e.mono_ns)]
    assert kinds == [("start", 0), ("assign", PARTITIONS), ("closing", 0), ("revoke", PARTITIONS), ("exit", 0)]
    assert all(e.member_id for e in truth.events if e.kind in ("assign", "revoke"))
    # what it processed is committed, by whoever commits in this framework: nothing would be read again
    assert committed(kafka, unique, truth) == {p: PER_PARTITION for p in range(PARTITIONS)}
