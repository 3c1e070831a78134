"""Recommend judges a group on its last ``recommend_window_h`` hours: history before the window
does not change the answer, and a member that joined before it formed the group at its start."""
from __future__ import annotations

from lens_scenarios.synthetic import P0, P1, P2, P3, Fleet
from pipelines.recommend.group_pass import recommend_group
from pipelines.recommend.window import as_of
from tests.support.reference_ownership import group_of

HOUR_MS = 3_600_000
DAYS = 10


def _restart_then_quiet() -> Fleet:
    """An eager range group of three whose m2 restarts at 20 s (a rebalance out, one back), then
    consumes quietly for ten days, a progress and a commit per partition an hour."""
    fleet = Fleet(group="old")
    m1, m2, m3 = (fleet.member(f"m{i}") for i in (1, 2, 3))
    for m, parts in ((m1, (P0, P1)), (m2, (P2,)), (m3, (P3,))):
        m.at(0).joins().at(500).assigned(*parts, generation=1)
        for p in parts:
            m.fetches(p, 0)
    m2.at(20_000).leaves().revokes(P2)
    m1.at(20_300).revokes(P0, P1)
    m3.at(20_300).revokes(P3)
    m1.at(20_600).assigned(P0, P1, generation=2).fetches(P0, 100).fetches(P1, 100)
    m3.at(20_600).assigned(P2, P3, generation=2).fetches(P2, 90).fetches(P3, 100)
    m2b = fleet.member("m2", host=m2.host, client_id=m2.client_id)
    m2b.at(21_000).joins()
    m1.at(21_300).revokes(P0, P1)
    m3.at(21_300).revokes(P2, P3)
    plan = ((m1, (P0, P1)), (m2b, (P2,)), (m3, (P3,)))
    for m, parts in plan:
        m.at(21_600).assigned(*parts, generation=3)
        for p in parts:
            m.fetches(p, 100)
    for hour in range(1, DAYS * 24 + 1):
        for m, parts in plan:
            for p in parts:
                m.at(hour * HOUR_MS).processes(p, upto=100 + hour * 1_000 - 1, interval_ms=HOUR_MS)
                m.commits(p, 100 + hour * 1_000)
    return fleet


def _recommend(window_h: float) -> tuple[list[dict], list[dict]]:
    fleet = _restart_then_quiet()
    intervals, handoffs, episodes, members, coverage = group_of(fleet.events, 10.0)
    coverage = [{**c, "hour_end_ms": c["hour_start_ms"] + HOUR_MS} for c in coverage]
    rows = [{"cluster_id": "", "group_id": fleet.group, "source": source, source: row}
            for source, rows in (("members", members), ("handoffs", handoffs), ("episodes", episodes),
                                 ("intervals", intervals), ("coverage", coverage)) for row in rows]
    return recommend_group(rows, "/lake", window_h=window_h)


def _current(what_if: list[dict]) -> dict:
    return next(w for w in what_if if w["is_current"])


def test_a_group_older_than_the_window_is_judged_on_the_window_alone():
    """Over 30 days the restart is in the window: priced and measured. Over the default 7 days
    it is not: nothing to price, the group is healthy, and the window is the last 7 days."""
    whole_what_if, _ = _recommend(window_h=30 * 24)
    whole = _current(whole_what_if)
    assert whole["predicted_rebalances"] >= 1 and whole["measured_pause_s"] > 0
    first, end = whole["window_start_ms"], whole["window_end_ms"]  # the first join, the last event
    assert end - first == DAYS * 24 * HOUR_MS

    what_if, found = _recommend(window_h=7 * 24)
    current = _current(what_if)
    assert (current["window_start_ms"], current["window_end_ms"]) == (end - 7 * 24 * HOUR_MS, end)
    assert current["predicted_rebalances"] == 0 and current["measured_pause_s"] == 0
    assert current["measured_duplicates"] == 0
    assert [r["kind"] for r in found] == ["healthy"]


def test_a_member_that_joined_before_the_window_formed_the_group_at_its_start():
    member = {"joined_ms": 1_000, "join_cause": "restart", "stalls": [{"began_ms": 2_000, "at_ms": 3_000,
                                                                         "back_ms": 4_000}],
              "enforced_ms": [5_000, 50_000],
              "subscriptions": [{"at_ms": 1_000, "topics": ["a"]}, {"at_ms": 6_000, "topics": ["b"]},
                                {"at_ms": 60_000, "topics": ["c"]}]}
    seen = as_of(member, 10_000)
    assert (seen["joined_ms"], seen["join_cause"]) == (10_000, "start")
    assert seen["subscriptions"] == [{"at_ms": 10_000, "topics": ["b"]}, {"at_ms": 60_000, "topics": ["c"]}]
    assert seen["stalls"] == [] and seen["enforced_ms"] == [50_000]
    assert as_of(member, 500) is member  # joined inside the window: as it is
