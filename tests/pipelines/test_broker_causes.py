"""Causes from the broker's log (pipelines/gold/broker_causes.py) on hand-made records: each rule of
the module docstring, exact where a record says it, probable where the log leaves a choice."""
from __future__ import annotations

from pipelines.broker_log.classic_history import classic_generations, classic_ownership_changes
from pipelines.broker_log.consumer_history import consumer_events, consumer_ownership_changes
from pipelines.gold.broker_causes import broker_causes
from pipelines.gold.broker_handoffs import broker_handoffs
from tests.support.broker_rows import assignment, commit, consumer_row, generation, member, member_metadata


def _commit(at_ms: int, partition: int, offset: int) -> dict:
    return commit(at_ms, offset, partition)


def _classic_causes(rows: list[dict], commits: list[dict] = ()) -> dict[tuple[int, str, str], tuple[str, str]]:
    """(partition, previous owner, next owner) -> (cause, confidence) of each handoff."""
    generations = classic_generations(rows)
    changes = classic_ownership_changes(generations)
    handoffs = broker_handoffs(changes, list(commits), [])
    broker_causes(handoffs, generations, [], changes, list(commits))
    return {(h["partition"], h["prev_member_id"], h["next_member_id"]): (h["cause"], h["cause_confidence"])
            for h in handoffs}


FORMED = [generation(0, 1_000, 1, [member("a", [0]), member("b", [1], client="cb")])]


def test_classic_a_join_is_exact_and_the_members_that_formed_the_group_started_it():
    rows = [generation(0, 1_000, 1, [member("a", [0, 1])]),
            generation(1, 2_000, 2, [member("a", [0]), member("b", [1], client="cb")]),  # formation: a second later
            generation(2, 60_000, 3, [member("a", [0]), member("b", []), member("c", [1], client="cc")])]
    causes = _classic_causes(rows)
    assert causes[(1, "a", "b")] == ("start", "exact")
    assert causes[(1, "b", "c")] == ("scale_out", "exact")
    assert causes[(0, "a", "a")] == ("scale_out", "exact")  # eager: the round moved a's partition too


def test_classic_a_leave_is_probable_graceful_within_its_timeout_and_a_crash_past_it():
    graceful = FORMED + [generation(1, 30_000, 2, [member("a", [0, 1])])]
    assert _classic_causes(graceful, [_commit(29_000, 1, 10)])[(1, "b", "a")] == ("scale_in", "probable")
    silent = FORMED + [generation(1, 60_000, 2, [member("a", [0, 1])])]
    assert _classic_causes(silent, [_commit(10_000, 1, 10)])[(1, "b", "a")] == ("crash", "probable")
    # the same process back under a new member id: it had stalled
    back = silent + [generation(2, 70_000, 3, [member("a", [0]), member("b2", [1], client="cb")])]
    causes = _classic_causes(back, [_commit(10_000, 1, 10)])
    assert causes[(1, "b", "a")] == causes[(1, "a", "b2")] == ("poll_interval_exceeded", "probable")


def test_classic_a_leave_and_a_join_moments_apart_are_a_restart():
    rows = FORMED + [generation(1, 30_000, 2, [member("a", [0, 1])]),
                     generation(2, 31_000, 3, [member("a", [0]), member("b2", [1], client="other")])]
    causes = _classic_causes(rows, [_commit(29_500, 1, 10)])
    assert causes[(1, "b", "a")] == causes[(1, "a", "b2")] == ("restart", "probable")


def test_classic_subscriptions_statics_and_rounds_where_nothing_changed():
    changed = FORMED + [generation(1, 30_000, 2, [member("a", [0, 1], topics=("t", "u")), member("b", [])])]
    assert _classic_causes(changed)[(1, "b", "a")] == ("subscription_change", "exact")
    same = FORMED + [generation(1, 30_000, 2, [member("a", [1]), member("b", [0], client="cb")])]
    assert _classic_causes(same)[(1, "b", "a")] == ("enforced", "probable")
    grown = FORMED + [generation(1, 30_000, 2, [member("a", [1, 2]), member("b", [0], client="cb")])]
    assert _classic_causes(grown)[(1, "b", "a")] == ("metadata_change", "probable")
    static = [generation(0, 1_000, 1, [member("a", [0], instance="i-a"), member("b", [1], instance="i-b")]),
              generation(1, 9_000, 1, [member("a", [0], instance="i-a"), member("b2", [1], instance="i-b")])]
    assert _classic_causes(static)[(1, "b", "b2")] == ("restart", "exact")


def _join(offset: int, at: int, member_id: str, epoch: int, **metadata) -> list[dict]:
    return [consumer_row(offset, at, "ConsumerGroupMemberMetadata", {"memberId": member_id},
                         member_metadata(**metadata)),
            consumer_row(offset + 1, at, "ConsumerGroupMetadata", {}, {"epoch": epoch, "metadataHash": 1})]


def _consumer_causes(rows: list[dict], commits: list[dict] = ()) -> dict[tuple[int, str, str], tuple[str, str]]:
    events, changes = consumer_events(rows, {"T": "t"}), consumer_ownership_changes(rows, {"T": "t"})
    handoffs = broker_handoffs(changes, list(commits), [])
    broker_causes(handoffs, [], events, changes, list(commits))
    return {(h["partition"], h["prev_member_id"], h["next_member_id"]): (h["cause"], h["cause_confidence"])
            for h in handoffs}


def _assign(offset: int, at: int, member_id: str, value: dict | None) -> dict:
    return consumer_row(offset, at, "ConsumerGroupCurrentMemberAssignment", {"memberId": member_id}, value)


def test_kip848_a_join_moves_partitions_by_its_epoch_bump_and_a_metadata_bump_is_exact():
    rows = [*_join(0, 1_000, "a", 1), _assign(2, 1_000, "a", assignment(1, [0, 1])),
            *_join(3, 30_000, "b", 2, client="cb"), _assign(5, 30_000, "b", assignment(2, [], state=2)),
            _assign(6, 31_000, "a", assignment(1, [0], pending=[1], state=1)),
            _assign(7, 31_200, "a", assignment(2, [0])), _assign(8, 32_000, "b", assignment(2, [1])),
            consumer_row(9, 50_000, "ConsumerGroupMetadata", {}, {"epoch": 3, "metadataHash": 2}),
            _assign(10, 51_000, "b", assignment(2, [], pending=[1], state=1)),
            _assign(11, 51_100, "b", assignment(3, [])), _assign(12, 52_000, "a", assignment(3, [0, 1]))]
    causes = _consumer_causes(rows)
    assert causes[(1, "a", "b")] == ("scale_out", "exact")
    assert causes[(1, "b", "a")] == ("metadata_change", "exact")


def test_kip848_a_fence_after_an_unanswered_revocation_is_a_stall_and_exact():
    rows = [*_join(0, 1_000, "a", 1, rebalance_timeout_ms=10_000), _assign(2, 1_000, "a", assignment(1, [0, 1])),
            *_join(3, 30_000, "b", 2, client="cb"), _assign(5, 30_000, "b", assignment(2, [], state=2)),
            _assign(6, 31_000, "a", assignment(1, [0], pending=[1], state=1)),
            _assign(7, 41_500, "a", None),
            consumer_row(8, 41_500, "ConsumerGroupMemberMetadata", {"memberId": "a"}, None),
            consumer_row(9, 41_500, "ConsumerGroupMetadata", {}, {"epoch": 3, "metadataHash": 1}),
            _assign(10, 42_000, "b", assignment(3, [0, 1]))]
    causes = _consumer_causes(rows, [_commit(30_500, 1, 10)])
    assert causes[(1, "a", "b")] == causes[(0, "a", "b")] == ("poll_interval_exceeded", "exact")


def test_kip848_a_static_member_replaced_under_a_new_id_is_an_exact_restart():
    rows = [*_join(0, 1_000, "a", 1, instance="i"), _assign(2, 1_000, "a", assignment(1, [0])),
            _assign(3, 5_000, "a", {**assignment(1, [0]), "memberEpoch": -2}),
            _assign(4, 6_000, "a", None),
            consumer_row(5, 6_000, "ConsumerGroupMemberMetadata", {"memberId": "a"}, None),
            consumer_row(6, 6_000, "ConsumerGroupMemberMetadata", {"memberId": "a2"}, member_metadata(instance="i")),
            _assign(7, 6_000, "a2", assignment(1, [0]))]
    assert _consumer_causes(rows)[(0, "a", "a2")] == ("restart", "exact")
