"""The what-if replay of a membership timeline: what each protocol hands over on a restart."""
from __future__ import annotations

import pytest

from pipelines.simulator import replay as replay_module
from pipelines.simulator.replay import Assignments, Setup, replay
from tests.support.member_rows import member_row


# m2 restarts: it leaves at 10 s and its replacement joins 1.5 s later
RESTART = [member_row("m1", 0), member_row("m2", 0, left=10_000, leave_cause="restart"), member_row("m3", 0),
           member_row("m2b", 11_500, join_cause="restart")]
PARTITIONS = {"orders": 6}


def _setup(assignor: str, static: bool = False) -> Setup:
    return Setup(assignor, static, session_timeout_ms=6_000, max_poll_interval_ms=300_000)


def test_eager_hands_over_every_partition_at_both_rebalances_of_a_restart():
    rebalances = list(replay(RESTART, PARTITIONS, _setup("classic:range")))
    assert [(r.trigger, len(r.handoffs)) for r in rebalances] == [("restart", 6), ("restart", 6)]
    assert sum(h.kind == "graceful" for r in rebalances for h in r.handoffs) == 12


@pytest.mark.parametrize("assignor", ["classic:cooperative-sticky", "consumer:uniform"])
def test_cooperative_hands_over_only_what_moves(assignor):
    rebalances = list(replay(RESTART, PARTITIONS, _setup(assignor)))
    assert [len(r.handoffs) for r in rebalances] == [2, 2]  # the leaver's two go, two come back to the joiner
    assert all(h.moved for r in rebalances for h in r.handoffs)


def test_static_membership_turns_a_quick_restart_into_a_wait_without_rebalance():
    (bounce,) = replay(RESTART, PARTITIONS, _setup("classic:range", static=True))
    assert not bounce.group_rebalance
    assert [(h.kind, h.moved, h.down_s) for h in bounce.handoffs] == [("bounce", False, 1.5)] * 2


def test_a_restart_longer_than_the_session_timeout_rebalances_even_when_static():
    slow = [*RESTART[:3], member_row("m2b", 17_000, join_cause="restart")]
    assert [r.group_rebalance for r in replay(slow, PARTITIONS, _setup("classic:range", static=True))] == [True, True]


def test_a_stall_below_max_poll_interval_is_no_rebalance():
    stalled = [member_row("m1", 0, stalls=[{"began_ms": 5_000, "at_ms": 15_000, "back_ms": 15_100}]),
               member_row("m2", 0)]
    impatient = Setup("classic:range", False, session_timeout_ms=6_000, max_poll_interval_ms=7_000)
    lost, back = replay(stalled, PARTITIONS, impatient)  # thrown out at 12 s, back at 15.1 s
    assert (lost.at_ms, back.at_ms) == (12_000, 15_100)
    assert {h.kind for h in lost.handoffs if h.moved} == {"lost"} and back.trigger == "poll_interval_exceeded"
    patient = Setup("classic:range", False, session_timeout_ms=6_000, max_poll_interval_ms=20_000)
    assert list(replay(stalled, PARTITIONS, patient)) == []


def test_a_kip848_stall_holds_the_members_own_partitions_for_the_whole_stall():
    """Under KIP-848 the stalled member's partitions waited out its stall and came back to it (librdkafka 2.16,
    Kafka 4.2: 10.0-10.5 s for a 10 s stall, where classic moved them after max.poll.interval.ms): one wait of
    its own partitions when it polls again, nothing else moves."""
    stalled = [member_row("m1", 0, stalls=[{"began_ms": 5_000, "at_ms": 15_000, "back_ms": 15_100}]),
               member_row("m2", 0)]
    (held,) = replay(stalled, PARTITIONS, Setup("consumer:uniform", False, 6_000, 7_000))
    assert (held.at_ms, held.trigger, held.group_rebalance) == (15_100, "poll_interval_exceeded", False)
    assert [(h.kind, h.moved, h.down_s) for h in held.handoffs] == [("held", False, 10.1)] * 3


def test_static_members_that_leave_for_good_rebalance_only_when_their_session_expires():
    leaving = [member_row("m1", 0), member_row("m2", 0, left=10_000, leave_cause="scale_in")]
    (expired,) = replay(leaving, PARTITIONS, _setup("classic:range", static=True))
    assert expired.at_ms == 16_000 and {h.down_s for h in expired.handoffs if h.moved} == {6.0}
    # the whole fleet stopping: the sessions expire after everyone has gone, nobody reads again
    stopping = [member_row("m1", 0, left=10_500, leave_cause="scale_in"),
                member_row("m2", 0, left=10_000, leave_cause="scale_in")]
    assert all(r.handoffs == () for r in replay(stopping, PARTITIONS, _setup("classic:range", static=True)))


# the restart, then m1 crashes at 30 s: found after the session timeout, the rounds before alike
RESTART_THEN_CRASH = [member_row("m1", 0, crashed=True, last_seen_ms=30_000), *RESTART[1:]]


def _model_runs(monkeypatch) -> list[str]:
    """The assignor model runs the replays make from now on (by assignor)."""
    runs: list[str] = []
    for name in ("assign", "classic_cooperative_rounds"):
        real = getattr(replay_module, name)

        def counted(assignor, *args, real=real, **kwargs):
            runs.append(assignor)
            return real(assignor, *args, **kwargs)
        monkeypatch.setattr(replay_module, name, counted)
    return runs


@pytest.mark.parametrize("assignor", ["classic:range", "classic:cooperative-sticky", "consumer:uniform"])
def test_setups_of_one_assignor_share_the_rounds_they_meet_alike(assignor, monkeypatch):
    """Two session timeouts meet the same rounds (the formation, the restart's leave and join, and
    the crash, found at different times but leaving the same members): the second replay runs
    no model, and both replay as they would alone."""
    quick, slow = (Setup(assignor, False, timeout, 300_000) for timeout in (6_000, 45_000))
    runs = _model_runs(monkeypatch)
    alone = [list(replay(RESTART_THEN_CRASH, PARTITIONS, s)) for s in (quick, slow)]
    alone_runs = len(runs)
    shared = Assignments(keep=1_000)
    assert [list(replay(RESTART_THEN_CRASH, PARTITIONS, s, shared)) for s in (quick, slow)] == alone
    assert alone_runs == 8 and len(runs) - alone_runs == 4


def test_shared_assignments_keep_no_more_partitions_than_told(monkeypatch):
    """Room for the formation's six partitions only: the second replay meets that one alone."""
    quick, slow = (Setup("classic:range", False, timeout, 300_000) for timeout in (6_000, 45_000))
    runs = _model_runs(monkeypatch)
    alone = [list(replay(RESTART_THEN_CRASH, PARTITIONS, s)) for s in (quick, slow)]
    alone_runs = len(runs)
    shared = Assignments(keep=6)
    assert [list(replay(RESTART_THEN_CRASH, PARTITIONS, s, shared)) for s in (quick, slow)] == alone
    assert len(runs) - alone_runs == alone_runs - 1


def test_a_classic_join_round_is_as_long_as_the_groups_restarts_showed():
    """Three restarts 0.70, 0.75 and 0.69 s from leave to rejoin; the first and last made one rebalance
    (the leaver's partitions and the joiner's first at one generation), the second two: a round window
    of 0.70 s replays them so, where the fixed 0.5 s split all three."""
    members = [member_row("a", 0, left=10_000, leave_cause="restart"), member_row("a2", 10_700, join_cause="restart"),
               member_row("b", 0, left=20_000, leave_cause="restart"), member_row("b2", 20_750, join_cause="restart"),
               member_row("c", 0, left=30_000, leave_cause="restart"), member_row("c2", 30_690, join_cause="restart")]

    def moved(prev: str | None, to: str, generation: int) -> dict:
        return {"prev_agent_id": prev, "next_agent_id": to, "generation": generation}

    handoffs = [moved(None, x, 1) for x in "abc"] + [
        moved("a", "a2", 3), moved("b", "a2", 4), moved("b", "c", 4), moved("c", "b2", 5), moved("c", "c2", 6)]
    round_ms = replay_module.observed_round_ms(members, handoffs)
    assert round_ms == 700
    rounds = list(replay(members, PARTITIONS, _setup("classic:range"), round_ms=round_ms))
    assert [r.at_ms for r in rounds] == [10_000, 20_000, 20_750, 30_000]
    assert len(list(replay(members, PARTITIONS, _setup("classic:range")))) == 6
    assert replay_module.observed_round_ms(RESTART, []) == replay_module.ROUND_MS  # nothing seen: the default


def test_a_static_members_return_says_nothing_of_the_join_round():
    """A static member back within its session keeps its generation (no rebalance at all): taken for
    a merged round it made a 1.3 s window that priced dynamic candidates one rebalance per restart."""
    members = [member_row("a", 0, left=10_000, leave_cause="restart", group_instance_id="web-1"),
               member_row("a2", 11_300, join_cause="restart", group_instance_id="web-1")]
    handoffs = [{"prev_agent_id": None, "next_agent_id": "a", "generation": 1},
                {"prev_agent_id": "a", "next_agent_id": "a2", "generation": 1}]
    assert replay_module.observed_round_ms(members, handoffs) == replay_module.ROUND_MS
