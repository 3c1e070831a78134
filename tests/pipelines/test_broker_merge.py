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
    assert row["stopped_by_ms"] == 9_400  # what only the log knows
    assert (row["duplicates_estimate"], row["duplicates_estimate_low"], row["duplicates_estimate_high"]) == (7, 7, 7)
    assert (row["cause"], row["cause_confidence"]) == ("restart", "exact")  # the agent saw why
    assert [(a["figure"], a["handoffs"], a["outside"]) for a in agreement("c", "g", checks)] == [
        ("duplicates", 1, 0), ("pause_s", 1, 0)]


def test_a_bounded_agent_figure_takes_the_logs_estimate_within_the_narrowed_bounds():
    agent = _row("agent", duplicates=20, duplicates_upper=60, pause_s=0.1, pause_upper_s=0.35, cause="unseen_member",
                 duplicates_estimate=40, pause_estimate_s=0.2)
    broker = _row("broker", duplicates_estimate_low=5, duplicates_estimate_high=30)
    (row,), _ = merge_handoffs([agent], [broker])
    assert (row["duplicates"], row["duplicates_upper"]) == (20, 40)  # the overlap
    assert (row["duplicates_estimate"], row["duplicates_estimate_low"], row["duplicates_estimate_high"]) == (20, 20, 30)
    assert (row["pause_s"], row["pause_upper_s"], row["pause_estimate_s"]) == (0.3, 0.35, 0.35)
    crashed = _row("agent", duplicates=20, duplicates_upper=60, release_kind="crash", duplicates_estimate=35)
    (row,), _ = merge_handoffs([crashed], [broker])
    assert row["duplicates_estimate"] == 35  # the owner's measured pace, inside the overlap


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


def test_duplicates_the_agent_counts_at_the_next_owner_that_reads_are_not_bounded_again_by_the_broker():
    """Its next owner read nothing: the duplicates are the first reader's after it (or none, at a run's end)."""
    link = _row("agent", next_agent_id="b", first_fetch_ms=None, duplicates=None, duplicates_upper=None,
                duplicates_estimate=None)
    (row,), checks = merge_handoffs([link], [_row("broker")])
    assert row["source"] == "both" and (row["duplicates"], row["duplicates_upper"], row["duplicates_estimate"]) == (
        None, None, None)
    assert (row["pause_s"], row["pause_upper_s"]) == (0.5, 0.5)  # its pause is its own
    assert {a["figure"]: a["handoffs"] for a in agreement("c", "g", checks)} == {"duplicates": 0, "pause_s": 1}


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
