"""The host's own rebalance callbacks raise, block past max.poll.interval.ms, or close the
consumer from inside: the InstrumentedConsumer's host sees what a plain Consumer's host sees,
callback by callback, exception by exception, record counts and final assignment included
(tests/support/host_transcript.py plays each scenario with both, at once, in child processes)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.support.host_transcript import RECORDS, SCENARIOS, transcripts


def test_the_agent_changes_nothing_the_host_sees(kafka, unique):
    topics = {}
    for scenario in SCENARIOS:
        topics[scenario] = kafka.create_topic(f"host-{scenario.replace('_', '-')}-{unique}", partitions=2)
        kafka.seed_partitions(topics[scenario], 2, RECORDS // 2)
    with ThreadPoolExecutor(len(SCENARIOS)) as pool:
        seen = dict(zip(SCENARIOS, pool.map(lambda s: transcripts(kafka.bootstrap_servers, topics[s], s, limit_s=45),
                                            SCENARIOS)))
    for scenario, both in seen.items():
        print(f"\n{scenario}: {both['plain']}")
    for scenario, both in seen.items():
        assert both["plain"] == both["instrumented"], (scenario, both)
    # each scenario did what it says, so the comparison is not between two empty transcripts
    plain = {s: both["plain"] for s, both in seen.items()}
    assert ["poll raised", "RuntimeError", "host bug in on_assign"] in plain["raise_in_assign"]
    assert ["close raised", "RuntimeError", "host bug in on_revoke"] in plain["raise_in_revoke"]
    assert ["poll error", "_MAX_POLL_EXCEEDED"] in plain["stall_between_polls"]
    assert ["closed inside on_assign"] in plain["close_in_assign"]
    for scenario in ("block_in_assign", "block_in_revoke", "stall_between_polls", "close_in_revoke"):
        assert ["records", RECORDS] in plain[scenario], scenario
    assert ["records", "all, or all but one"] in plain["raise_in_assign"]
