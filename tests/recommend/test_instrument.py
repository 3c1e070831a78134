"""Instrument this group (``pipelines.recommend.instrument``): the advice to run the agent where the
broker's bounds are too wide to choose between changes and the possible saving is large, at the
thresholds ``pipelines.policy`` declares; and every recommendation says where the figures it rests on came
from, its confidence lowered where they are bounds. Plain rows, no Spark."""
from __future__ import annotations

from typing import Any

import pytest

from pipelines.policy import INSTRUMENT_MIN_DUPLICATES, INSTRUMENT_MIN_PAUSE_S, INSTRUMENT_SPREAD, TOLERANCE
from pipelines.recommend.bounds import spread
from pipelines.recommend.group_pass import recommend_group
from pipelines.recommend.instrument import instrument_advice
from pipelines.recommend.judgement import Evidence, bounds_reasons
from pipelines.recommend.kinds import INSTRUMENT
from tests.support.fleets import busy_fleet
from tests.support.reference_ownership import group_of

T0 = 1_767_225_600_000


def handoff(n: int, source: str, duplicates: tuple[int, int | None], pause: tuple[float, float | None],
            estimates: tuple[Any, Any] = (None, None)) -> dict[str, Any]:
    return {"handoff_id": f"h{n}", "cause": "restart", "source": source, "unseen_owner": source == "broker",
            "release_kind": "revoked", "revoke_ms": T0 + 1000 * n, "assigned_ms": T0 + 1000 * n + 500,
            "duplicates": duplicates[0], "duplicates_upper": duplicates[1], "pause_s": pause[0],
            "pause_upper_s": pause[1], "duplicates_estimate": estimates[0], "pause_estimate_s": estimates[1]}


def coverage(covered_s: float, owned_s: float, broker_s: float) -> dict[str, Any]:
    return {"covered_s": covered_s, "owned_s": owned_s, "broker_covered_s": broker_s, "hour_end_ms": T0 + 3_600_000}


def rows_of(group: str, **sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"cluster_id": "eu", "group_id": group, "source": source, source: row}
            for source, rows in sources.items() for row in rows]


def test_a_group_only_the_broker_sees_gets_the_advice_as_its_one_row_when_its_bounds_are_wide_and_costly():
    """An eager classic group without the agent: the log cannot say when each round started, so each handoff's
    duplicates lie between 0 and 800 (the records produced by the round's join), its pause between 1 and 40 s."""
    handoffs = [handoff(n, "broker", (0, 800), (1.0, 40.0), (300, 12.0)) for n in range(4)]
    what_if, found = recommend_group(rows_of("plain", handoffs=handoffs, coverage=[coverage(0.0, 500.0, 500.0)]),
                                     "/lake", topic="lens-telemetry")
    assert what_if == [] and [r["kind"] for r in found] == [INSTRUMENT.name] and found[0]["rank"] == 1
    advice = found[0]
    assert advice["title"] == INSTRUMENT.title and advice["source"] == "broker" and advice["confidence"] == "high"
    assert advice["config_change"] == list(INSTRUMENT.settings("lens-telemetry"))
    assert "lens.telemetry.topic=lens-telemetry" in advice["config_change"]
    assert advice["rollout"][-1] == INSTRUMENT.rolling_back and advice["rollout"][0].startswith("Canary")
    assert advice["evidence"][0].startswith("4 of the group's 4 handoffs after it formed were seen only by the broker")
    assert "Duplicates: 0 to 3,200 (most likely 1,200)" in advice["evidence"][1]
    assert "The agent saw 0% of the group's partition-time exactly, the broker 100%" in advice["evidence"][-1]
    assert advice["predicted_duplicates_saved"] is None and advice["current_config"] is None
    assert ":group_id" in advice["evidence_query"] and "plain" not in advice["evidence_query"]


def _edge(off: float, upper: float) -> list[dict[str, Any]]:
    """Broker-only handoffs whose duplicates sum to ``upper`` at the top and leave their midpoint ``off`` of
    itself from the truth: (U - L) / (U + L) = off, so L = U (1 - off) / (1 + off)."""
    lower = round(upper * (1 - off) / (1 + off))
    return [handoff(0, "broker", (lower, int(upper)), (0.0, 0.0))]


@pytest.mark.parametrize("off, upper, fires", [
    (INSTRUMENT_SPREAD + 0.05, INSTRUMENT_MIN_DUPLICATES, True),  # wide enough, at the least large cost
    (INSTRUMENT_SPREAD + 0.05, INSTRUMENT_MIN_DUPLICATES - 10, False),  # wide, but too little to be worth it
    (INSTRUMENT_SPREAD - 0.05, 100 * INSTRUMENT_MIN_DUPLICATES, False),  # costly, but narrow enough to price
])
def test_the_advice_follows_the_policys_thresholds(off, upper, fires):
    assert (instrument_advice(_edge(off, upper), [], "t") is not None) == fires


def test_the_pause_alone_can_call_for_it_and_the_agents_exact_handoffs_narrow_the_spread():
    wide_pause = [handoff(0, "broker", (0, 0), (10.0, INSTRUMENT_MIN_PAUSE_S))]
    assert instrument_advice(wide_pause, [], "t") is not None
    exact = [handoff(n, "both", (0, 0), (60.0, 60.0)) for n in range(1, 40)]  # the agent saw most of the time
    assert spread(wide_pause + exact, "pause_s").broker_off < INSTRUMENT_SPREAD
    assert instrument_advice(wide_pause + exact, [], "t") is None


def _partial(extra: list[dict[str, Any]], covered: float) -> list[dict[str, Any]]:
    """busy_fleet's gold (every member with the agent) as a partly instrumented group would send it: the agent
    saw ``covered`` of the partition-time, the broker all of it, its handoffs ``extra`` beside the agent's."""
    intervals, handoffs, episodes, members, _ = group_of(busy_fleet().events, gap_s=10.0)
    return rows_of("busy", members=members, handoffs=handoffs + extra, episodes=episodes, intervals=intervals,
                   coverage=[coverage(covered, 100.0, 100.0)])


def test_the_advice_takes_the_coverage_warnings_place_where_the_broker_prices_the_rest():
    wide = [handoff(90 + n, "broker", (0, 1_000), (0.0, 200.0)) for n in range(3)]
    _, found = recommend_group(_partial(wide, 50.0), "/lake")
    assert found[0]["kind"] == INSTRUMENT.name and "coverage" not in [r["kind"] for r in found]
    assert found[0]["source"] == "both"  # the agent's handoffs and the broker's
    narrow = [handoff(90, "broker", (10, 11), (2.0, 2.1))]  # a KIP-848 handoff, timed to a heartbeat
    _, found = recommend_group(_partial(narrow, 50.0), "/lake")
    assert found[0]["kind"] == "coverage" and INSTRUMENT.name not in [r["kind"] for r in found]


def test_every_recommendation_says_where_its_figures_came_from():
    _, found = recommend_group(_partial([], 100.0), "/lake")
    assert found and {r["source"] for r in found} == {"agent"}


def test_a_price_anchored_to_wide_bounds_says_so_in_its_confidence():
    """A crash's bounds (the agent's: its last tick, then the session timeout) or the broker's: a midpoint
    that can be more than TOLERANCE off lowers the confidence of every price anchored to it."""
    def reasons(handoffs: list[dict[str, Any]]) -> list[str]:
        return bounds_reasons(Evidence("g", [], handoffs, [], [], None))  # type: ignore[arg-type]

    crash = [handoff(0, "agent", (5, 5), (9.3, 45.0))]
    assert spread(crash, "pause_s").off > TOLERANCE
    assert reasons(crash) == ["the measured paused partition-seconds it is anchored to are known only within bounds "
                              "(9.3 to 45.0): their midpoint can be 66% off"]
    assert reasons([handoff(0, "agent", (5, 5), (9.3, 9.4))]) == []
