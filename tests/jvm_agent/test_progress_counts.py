"""The Java agent's progress counts in the default mode: records returned by a poll are processed by the next.

ProgressDriver.java (run by tests/support/jvm_drivers.py) reads a pre-filled topic alone, a record per poll, with a
progress tick every 5 ms, then idles. The agent counts hand-outs per partition and derives "processed since the last
tick" at the tick (jvm_agent's Progress/Processed), so the counts are held here against the positions the same
events report: the partition starts at offset 0, so before a tick's poll `position` records were handed out, less
the one record the tick's own poll may have returned (not processed yet).
"""
from __future__ import annotations

from collections import defaultdict

from tests.support.jvm_drivers import run_driver
from tests.support.telemetry_log import TelemetryLog

PARTITIONS = 4
PER_PARTITION = 150


def test_default_mode_progress_counts_every_record_once_by_the_next_poll(kafka, unique, tmp_path):
    topic = kafka.create_topic(f"jvm-progress-{unique}", partitions=PARTITIONS)
    kafka.seed_partitions(topic, PARTITIONS, PER_PARTITION)
    telemetry = f"jvm-progress-telemetry-{unique}"
    run_driver("ProgressDriver", [kafka.bootstrap_servers, topic, f"jvm-progress-{unique}", telemetry,
                                  str(PARTITIONS * PER_PARTITION)], tmp_path)
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    try:
        log.wait_for(lambda lg: any(e["kind"] == "state_transition" and e["body"]["reason"] == "close"
                                    for e in lg.events), timeout=60, what="the consumer's close")
        progress = sorted((e for e in log.events if e["kind"] == "progress"), key=lambda e: e["seq"])
    finally:
        log.close()

    processed: dict[int, int] = defaultdict(int)  # cumulative, per partition
    mid_stream = 0  # ticks whose own poll had returned a record (then not yet processed)
    for event in progress:
        pending = 0
        for p in event["body"]["partitions"]:
            processed[p["partition"]] += p["processed"]
            handed_out = max(p["position"], 0)  # OFFSET_UNKNOWN (-1001): nothing handed out yet
            assert processed[p["partition"]] in (handed_out, handed_out - 1), (event["seq"], p)
            pending += handed_out - processed[p["partition"]]
        assert pending <= 1, event  # max.poll.records=1: one record at most is the tick's own
        mid_stream += pending
    assert mid_stream > 0  # some ticks fell inside the stream (the case a count can be off by a poll)
    last = progress[-1]["body"]["partitions"]
    assert {p["partition"]: p["position"] for p in last} == {p: PER_PARTITION for p in range(PARTITIONS)}
    assert dict(processed) == {p: PER_PARTITION for p in range(PARTITIONS)}
