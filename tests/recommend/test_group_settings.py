"""The KIP-848 settings the cluster applies to a group reach the what-if, and a group priced with
assumed ones says which (what the cluster says: tests/pipelines/test_cluster_settings.py)."""
from __future__ import annotations

import pytest

from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.judgement import Evidence
from pipelines.recommend.rules import recommend
from pipelines.recommend.what_if import what_if
from tests.support.fleets import eager_rolling_restarts, phased_consumer_protocol
from tests.support.reference_ownership import gold_of_group

EMBEDDED = BrokerGroups(1_000, 10_000, True, "cluster c1: the brokers' group.consumer.* settings")


def test_a_groups_learned_settings_reach_the_what_if():
    """A classic group's KIP-848 candidates: their session timeout is the cluster's, and a move waits
    half the cluster's heartbeat (1 s here against the 5 s default: 2 s less a moved partition)."""
    intervals, handoffs, _, members = gold_of_group(eager_rolling_restarts().events, gap_s=10.0)
    learned, assumed = (what_if(members, handoffs, intervals, b) for b in (EMBEDDED, BrokerGroups()))
    kip848 = [c for c in learned.priced if c.setup.assignor.startswith("consumer:")]
    assert kip848 and {c.setup.session_timeout_ms for c in kip848} == {10_000}
    moved = learned.fitted.move_pause_s["consumer"], assumed.fitted.move_pause_s["consumer"]
    assert [b - a for a, b in zip(*moved)] == pytest.approx([2.0, 2.0])
    assert learned.broker is EMBEDDED


def test_a_kip848_group_is_priced_with_its_clusters_session_timeout_and_an_assumed_one_is_said():
    intervals, handoffs, episodes, members = gold_of_group(phased_consumer_protocol().events, gap_s=10.0)
    w = what_if(members, handoffs, intervals, EMBEDDED)
    assert w.current.setup.assignor.startswith("consumer:") and w.current.setup.session_timeout_ms == 10_000
    found = recommend(Evidence("g", members, handoffs, episodes, intervals, w, 1.0))
    assert not any("assumed settings" in line for r in found for line in r.evidence)

    unread = BrokerGroups(5_000, 45_000, False, "the group's cluster is not the one the pipeline reads telemetry "
                                                "from (c9), where they are read")
    w = what_if(members, handoffs, intervals, unread)
    said = [line for r in recommend(Evidence("g", members, handoffs, episodes, intervals, w, 1.0))
            for line in r.evidence if "assumed settings" in line]
    assert said == ["KIP-848 is priced with assumed settings, group.consumer.heartbeat.interval.ms=5000 and "
                    "group.consumer.session.timeout.ms=45000 (--kip848-heartbeat-ms, --kip848-session-timeout-ms; "
                    "Kafka's defaults unless set): the group's cluster is not the one the pipeline reads telemetry "
                    "from (c9), where they are read."]
