"""The recommendation rules on small fleets whose right answer is known: no noise where
there is nothing to change, the expected changes where there is."""
from __future__ import annotations

from tests.support.fleets import busy_fleet, quiet_group, static_cooperative_restarts
from tests.support.recommending import recommend_fleet as _recommend


def test_a_group_without_churn_gets_no_change_and_says_why():
    _, found = _recommend(quiet_group())
    assert [(r["kind"], r["config_change"]) for r in found] == [("healthy", [])]
    assert "no rebalance after the group formed" in found[0]["evidence"][0]


def test_a_group_already_on_the_configuration_the_rules_pick_gets_no_change():
    """Static, cooperative-sticky, commit-on-revoke: its restarts are no rebalances, nothing re-delivered."""
    what_if, found = _recommend(static_cooperative_restarts())
    assert [r["kind"] for r in found] == ["healthy", "migration_hold", "migration_readiness"]
    # a classic group told why not to migrate: KIP-848 would not save what its restarts cost
    assert found[1]["evidence"][0].startswith("No KIP-848 configuration pays: the best")
    # and, should it migrate one day, that librdkafka's cooperative-sticky rules out the online upgrade
    assert [line.split(":")[0] for line in found[2]["evidence"]] == ["[blocking] sticky_user_data"]
    current = next(w for w in what_if if w["is_current"])
    assert current["predicted_rebalances"] == 0 and current["predicted_duplicates"] == 0
    # the model of the current configuration (its replay) reproduces what gold measured
    assert abs(current["replayed_pause_s"] - current["measured_pause_s"]) <= 0.1 * current["measured_pause_s"]


def test_an_eager_group_that_restarts_and_crashes_gets_a_shorter_session_priced():
    """busy_fleet: range, 3 s heartbeats, a restart, a crash after a 45 s session timeout, a scale-out.

    The crash's pause counts (at least 9.3 s: m3's last tick was at 22.6 s, a second after the one
    before, so it was gone by 24.1 s), so static membership, which saves the restart's 1.4 s, stays
    under the rules' MIN_SAVING share of the group's pause: priced, not recommended. Before the
    crash was priced (its pause's lower bound was 0) static membership was recommended too."""
    what_if, found = _recommend(busy_fleet())
    changes = {r["kind"]: r for r in found if r["config_change"]}
    assert "session_timeout" in changes and "static_membership" not in changes
    assert any(w["static_membership"] and w["predicted_pause_saved_s"] > 1.0 for w in what_if)
    assert changes["session_timeout"]["config_change"] == ["session.timeout.ms=9000"]  # three heartbeats
    assert changes["session_timeout"]["tradeoff"]
    for r in changes.values():
        assert r["predicted_pause_saved_s"] > 0 and r["predicted_duplicates_saved"] >= 0 and r["evidence"] \
            and r["rollout"]
        assert ":group_id" in r["evidence_query"] and "busy" not in r["evidence_query"]  # a parameter, not text
    ranks = [r["rank"] for r in found]
    assert ranks == sorted(ranks) == list(range(1, len(found) + 1))
    assert sum(w["is_current"] for w in what_if) == 1
