"""The assignment calls a host's rebalance callbacks make are recorded (``callback_calls``, read by
the KIP-848 readiness lint: the consumer protocol fails ``assign()``/``unassign()`` there), and
the host sees what it sees with a plain ``Consumer`` (both played at once, in child processes)."""
from __future__ import annotations

from tests.support.host_transcript import RECORDS, telemetry_topic, transcripts
from tests.support.telemetry_log import TelemetryLog

SCENARIO = "assign_in_callbacks"


def test_assign_and_unassign_in_the_hosts_callbacks_are_recorded_and_change_nothing(kafka, unique):
    topic = kafka.create_topic(f"host-calls-{unique}", partitions=2)
    kafka.seed_partitions(topic, 2, RECORDS // 2)
    both = transcripts(kafka.bootstrap_servers, topic, SCENARIO, limit_s=40)
    assert both["plain"] == both["instrumented"], both
    assert ["assign call returned", None] in both["plain"] and ["revoke call returned", None] in both["plain"]
    assert ["records", RECORDS] in both["plain"]

    log = TelemetryLog(kafka.bootstrap_servers, telemetry_topic(topic))
    try:
        log.wait_for(lambda t: any(e["kind"] == "partitions_revoked" for e in t.events), timeout=20,
                     what="the revoke at close")
        calls = [(e["kind"], e["body"]["callback_calls"]) for e in sorted(log.events, key=lambda e: e["seq"])
                 if e["kind"] in ("partitions_assigned", "partitions_revoked")]
    finally:
        log.close()
    assert calls == [("partitions_assigned", ["assign"]), ("partitions_revoked", ["unassign"])]
