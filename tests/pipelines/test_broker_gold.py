"""Gold from both sources (pipelines/gold/broker_gold.py): the agent path's outputs of a group with the
broker's history merged in, each row saying where its figures came from."""
from __future__ import annotations

import pytest

from pipelines.gold.broker_gold import HISTORY_COLUMNS, BrokerHistory, history_of, with_broker
from tests.support.broker_rows import A_COMMITS, B_COMMITS, change as _change, log_ends as _log_ends

HOUR = 3_600_000


def _agent_outputs() -> tuple[list[dict], ...]:
    """One agent handoff A -> B (exact figures), its episode and the hour's coverage."""
    handoff = {"handoff_id": "a>b:t/0", "cluster_id": "c", "group_id": "g", "topic": "t", "partition": 0,
               "prev_member_id": "A", "next_member_id": "B", "assigned_ms": 11_020, "generation": 5,
               "duplicates": 20, "duplicates_upper": 20, "pause_s": 0.9, "pause_upper_s": 0.9, "cause": "scale_out",
               "episode_id": "g@e1", "episode_start_ms": 10_000}
    episode = {"episode_id": "g@e1", "cluster_id": "c", "group_id": "g", "start_ms": 10_000, "end_ms": 11_100}
    return [handoff], [episode], [], [], [{"hour_start_ms": 0, "covered_s": 11.0, "owned_s": 11.0}]


def _history() -> BrokerHistory:
    seen = _change()  # A -> B, which the agent saw too
    plain = _change(partition=1, at_ms=40_000, owner="P", previous_owner="B", previous_since_ms=20_000,
                    revoke_requested_ms=39_000, released_ms=39_200, offset=5)  # to a member without the agent
    first = _change(partition=1, kind="assigned", owner="B", previous_owner=None, previous_since_ms=None,
                    at_ms=20_000, released_ms=None, release_kind=None, revoke_requested_ms=None, offset=4)
    changes = [seen, first, plain]
    commits = A_COMMITS + B_COMMITS
    return BrokerHistory(changes, commits, _log_ends(changes, commits), end_ms=50_000)


def test_without_the_broker_every_figure_is_the_agents():
    handoffs, episodes, _, _, coverage, agreement = with_broker(_agent_outputs(), None, 10.0, "c", "g")
    assert [(h["source"], h["cause_confidence"]) for h in handoffs] == [("agent", "exact")]
    assert [e["source"] for e in episodes] == ["agent"] and coverage[0]["broker_covered_s"] is None
    assert [a["handoffs"] for a in agreement] == [0, 0]


def test_with_the_broker_a_shared_handoff_is_both_and_a_plain_members_is_the_brokers():
    handoffs, episodes, _, _, coverage, agreement = with_broker(_agent_outputs(), _history(), 10.0, "c", "g",
                                                                {"A", "B"})
    by_source = {h["source"]: h for h in handoffs}
    assert set(by_source) == {"both", "broker"}
    both, broker = by_source["both"], by_source["broker"]
    assert (both["duplicates"], both["pause_s"], both["stopped_by_ms"]) == (20, 0.9, 10_200)
    assert (broker["prev_member_id"], broker["next_member_id"], broker["partition"]) == ("B", "P", 1)
    assert broker["episode_id"] != both["episode_id"]  # 29 s later: an episode of its own
    assert sorted(e["source"] for e in episodes) == ["both", "broker"]
    assert [(a["figure"], a["handoffs"], a["outside"]) for a in agreement] == [("duplicates", 1, 0),
                                                                               ("pause_s", 1, 0)]
    # partition 0 from A's assignment at 1 s, partition 1 from 20 s, both to the group's last record (50 s)
    assert coverage[0]["broker_covered_s"] == pytest.approx(49.0 + 30.0)
    # owned: what the agent's members held, exactly, and P's tenure (40 s to 50 s), the member without the agent
    assert coverage[0]["covered_s"] == 11.0 and coverage[0]["owned_s"] == pytest.approx(11.0 + 10.0)


def test_a_fully_instrumented_group_stays_fully_covered_whatever_the_tenures_the_log_counts():
    """Tenures run from one change to the next (a round, a static member's absence): the agent's
    members' are not mixed into what it held."""
    *_, coverage, _ = with_broker(_agent_outputs(), _history(), 10.0, "c", "g", {"A", "B", "P"})
    assert coverage[0]["owned_s"] == coverage[0]["covered_s"] == 11.0 and coverage[0]["broker_covered_s"] > 11.0


def test_a_broker_row_stored_by_an_earlier_run_is_priced_afresh_not_taken_for_the_agents():
    outputs = _agent_outputs()
    stored = {**outputs[0][0], "handoff_id": "broker:old", "source": "broker", "partition": 1}
    handoffs, *_ = with_broker(([*outputs[0], stored], *outputs[1:]), _history(), 10.0, "c", "g")
    assert "broker:old" not in {h["handoff_id"] for h in handoffs} and len(handoffs) == 2


def test_the_group_pass_rows_give_the_history_in_log_order_and_none_for_a_group_the_log_never_showed():
    history = _history()
    rows = [{"cluster_id": "c", "group_id": "g", "broker_end_ms": 50_000}]
    for field, column in HISTORY_COLUMNS.items():
        rows += [{column: r} for r in reversed(getattr(history, field))]
    read = history_of(rows)
    assert read.end_ms == 50_000 and [c["offset"] for c in read.changes] == [1, 4, 5]
    assert read.commits == sorted(history.commits, key=lambda c: c["offset"]) and len(read.log_ends) == len(
        history.log_ends)
    assert history_of([{"cluster_id": "c", "group_id": "g", "event": {}}]) is None


def test_a_group_is_recomputed_when_the_log_went_on_past_what_gold_priced_on_its_own_cluster():
    from pipelines.gold.broker_input import BrokerMark, with_new_history

    marks = {("c", "a"): BrokerMark(10, 1_000), ("c", "b"): BrokerMark(20, 2_000), ("d", "a"): BrokerMark(5, 3_000)}
    # ("c", "a") priced through its last record; ("c", "b") one behind; ("d", "a"): the same group id on
    # another cluster, never priced
    assert with_new_history(marks, {("c", "a"): 10, ("c", "b"): 19}) == [("c", "b"), ("d", "a")]
    assert with_new_history(marks, {g: m.through_offset for g, m in marks.items()}) == []
