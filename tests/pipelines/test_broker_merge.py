"""The agent's handoffs and the broker's in one table (pipelines/gold/broker_merge.py): the agent's exact
figures win, the broker's bounds must contain them and a disagreement is counted, never hidden."""
from __future__ import annotations

import pytest

from pipelines.gold.broker_merge import agreement, merge_handoffs


def _row(source: str, **fields) -> dict:
    row = {"handoff_id": f"{source}-1", "cluster_id": "c", "group_id": "g", "topic": "t", "partition": 0,
           "prev_member_id": "A", "next_member_id": "B", "assigned_ms": 10_000, "duplicates": 0,
           "duplicates_upper": 0, "pause_s": 0.5, "pause_upper_s": 0.5, "cause": "restart",
           "cause_confidence": None, "duplicates_estimate": None, "pause_estimate_s": None,
           "stopped_after_ms": None, "stopped_by_ms": None}
    if source == "broker":
        row.update(duplicates=0, duplicates_upper=40, pause_s=0.3, pause_upper_s=2.0, duplicates_estimate=12,
                   pause_estimate_s=0.4, stopped_after_ms=9_000, stopped_by_ms=9_400, cause="scale_in",
                   cause_confidence="probable", assigned_ms=9_950)
    return {**row, **fields}


def test_the_agents_exact_figures_win_inside_the_broker_bounds():
    rows, checks = merge_handoffs([_row("agent", duplicates=7, duplicates_upper=7)], [_row("broker")])
    (row,) = rows
    assert row["source"] == "both" and row["handoff_id"] == "agent-1"
    assert (row["duplicates"], row["duplicates_upper"], row["pause_s"], row["pause_upper_s"]) == (7, 7, 0.5, 0.5)
    assert (row["duplicates_estimate"], row["stopped_by_ms"]) == (12, 9_400)  # what only the log knows
    assert (row["cause"], row["cause_confidence"]) == ("restart", "exact")  # the agent saw why
    assert [(a["figure"], a["handoffs"], a["outside"]) for a in agreement("c", "g", checks)] == [
        ("duplicates", 1, 0), ("pause_s", 1, 0)]


def test_an_exact_figure_outside_the_broker_bounds_is_kept_and_counted():
    rows, checks = merge_handoffs([_row("agent", duplicates=55, duplicates_upper=55, pause_s=0.1,
                                        pause_upper_s=0.1)], [_row("broker")])
    assert (rows[0]["duplicates"], rows[0]["pause_s"]) == (55, 0.1)
    by_figure = {a["figure"]: a for a in agreement("c", "g", checks)}
    assert by_figure["duplicates"]["outside"] == 1 and by_figure["duplicates"]["most_outside"] == 15
    assert by_figure["pause_s"]["most_outside"] == pytest.approx(0.3 - 0.005 - 0.1)


def test_bounds_of_both_narrow_to_their_overlap():
    agent = _row("agent", duplicates=10, duplicates_upper=90, pause_s=1.0, pause_upper_s=None, cause="crash")
    (row,), checks = merge_handoffs([agent], [_row("broker")])
    assert (row["duplicates"], row["duplicates_upper"]) == (10, 40)
    assert (row["pause_s"], row["pause_upper_s"]) == (1.0, 2.0)
    assert all(a["outside"] == 0 for a in agreement("c", "g", checks))


def test_an_owner_the_agent_did_not_see_takes_the_brokers_member_and_cause():
    unseen = _row("agent", handoff_id="x~unseen", next_member_id=None, pause_s=None, pause_upper_s=None,
                  duplicates=3, duplicates_upper=None, cause="unseen_member")
    (row,), _ = merge_handoffs([unseen], [_row("broker", next_member_id="P")])
    assert row["next_member_id"] == "P" and (row["cause"], row["cause_confidence"]) == ("scale_in", "probable")
    assert (row["duplicates"], row["duplicates_upper"], row["pause_s"], row["pause_upper_s"]) == (3, 40, 0.3, 2.0)


def test_a_handoff_only_one_source_saw_keeps_its_own_source():
    far = _row("broker", assigned_ms=90_000)
    other = _row("broker", handoff_id="broker-2", next_member_id="C")  # not the agent's next owner
    rows, checks = merge_handoffs([_row("agent")], [far, other])
    assert sorted(r["source"] for r in rows) == ["agent", "broker", "broker"] and checks == []
    assert {r["cause_confidence"] for r in rows if r["source"] == "agent"} == {"exact"}
