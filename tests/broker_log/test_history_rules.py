"""The history functions' rules on plain rows made by hand (no broker): what a real capture rarely
shows (failed rounds, a deleted group, an unknown assignor, a busy partition's commits)."""
from __future__ import annotations

from pipelines.broker_log.classic_history import classic_generations, classic_ownership_changes
from pipelines.broker_log.commit_window import KEEP_REASONS, kept_commits
from pipelines.broker_log.consumer_history import consumer_events, consumer_ownership_changes
from tests.support.broker_rows import assignment as _assignment, consumer_row as _consumer_row
from tests.support.broker_rows import generation as _generation, member as _member


def test_a_gap_in_generations_counts_failed_rounds_and_a_tombstone_starts_over():
    rows = [_generation(0, 1000, 1, [_member("a", [0, 1])]), _generation(1, 2000, 4, [_member("a", [0, 1])]),
            _generation(2, 3000, -1, []), _generation(3, 4000, 1, [_member("b", [0])])]
    generations = classic_generations(rows)
    assert [g["kind"] for g in generations] == ["generation", "generation", "deleted", "generation"]
    assert [g["failed_rounds"] for g in generations] == [None, 2, None, None]
    assert generations[2]["left"] == ["a"] and generations[3]["joined"] == ["b"]
    changes = classic_ownership_changes(generations)
    assert [(c["partition"], c["kind"], c["previous_owner"], c["owner"]) for c in changes][-3:] == [
        (0, "released", "a", None), (1, "released", "a", None), (0, "assigned", None, "b")]


def test_an_assignor_the_lens_does_not_declare_is_not_guessed_eager():
    rows = [_generation(0, 1000, 1, [_member("a", [0, 1])], protocol="my-assignor"),
            _generation(1, 2000, 2, [_member("a", [0]), _member("b", [1])], protocol="my-assignor")]
    generations = classic_generations(rows)
    assert [g["rebalance_protocol"] for g in generations] == [None, None]
    changes = classic_ownership_changes(generations)
    assert [(c["partition"], c["kind"], c["previous_owner"], c["owner"]) for c in changes] == [
        (0, "assigned", None, "a"), (1, "assigned", None, "a"), (1, "assigned", "a", "b")]


def _commits(partition: int, start_ms: int, end_ms: int, every_ms: int, per_commit: int) -> list[dict]:
    return [{"group_id": "g", "topic": "t", "partition": partition, "committed_offset": i * per_commit,
             "leader_epoch": -1, "commit_timestamp_ms": at, "at_ms": at, "offsets_partition": 0, "offset": i}
            for i, at in enumerate(range(start_ms, end_ms, every_ms))]


def _change(at_ms: int) -> dict:
    return {"topic": "t", "partition": 0, "at_ms": at_ms}


def test_commits_kept_are_bounded_per_change_whatever_the_commit_rate():
    changes = [_change(600_500), _change(1_800_250), _change(3_000_010)]
    hour = 3_600_000
    for every_ms in (1000, 100, 10):  # 1, 10 and 100 commits a second for an hour
        kept = kept_commits(_commits(0, 0, hour, every_ms, 5), changes)
        by_change = [k for k in kept if set(k["reasons"]) & {"before_change", "after_change", "first_advance",
                                                              "last_advance", "before_last_advance"}]
        assert len(by_change) <= 5 * len(changes)
        assert len(kept) <= 5 * len(changes) + hour // 60_000 + 1, every_ms
        assert all(set(k["reasons"]) <= set(KEEP_REASONS) for k in kept)


def test_the_commits_around_a_change_are_the_ones_the_bounds_read():
    commits = _commits(0, 0, 10_000, 1000, 5)  # offsets 0, 5, ..., 45 at 0 s ... 9 s
    commits[5]["committed_offset"] = commits[4]["committed_offset"]  # the new owner first commits where it started
    kept = {k["at_ms"]: k["reasons"] for k in kept_commits(commits, [_change(4500)], checkpoint_ms=60_000)}
    assert "before_change" in kept[4000] and "after_change" in kept[5000] and "first_advance" in kept[6000]
    # the previous owner's stop window opens at the commit before the one that reached its last offset
    assert "last_advance" in kept[4000] and kept[3000] == ["before_last_advance"]
    assert kept[0] == ["checkpoint"] and kept[9000] == ["latest"] and len(kept) == 6


def test_the_last_advance_is_the_first_commit_of_a_repeated_offset():
    commits = _commits(0, 0, 8000, 1000, 5)  # offsets 0, 5, ..., 35
    for c in commits[4:]:
        c["committed_offset"] = 20  # an idle partition: the same offset committed again and again
    kept = {k["at_ms"]: k["reasons"] for k in kept_commits(commits, [_change(7500)], checkpoint_ms=60_000)}
    assert "before_change" in kept[7000] and "last_advance" in kept[4000] and kept[3000] == ["before_last_advance"]


def test_a_deleted_offset_is_kept_and_a_nameless_topic_keeps_nothing():
    commits = _commits(0, 0, 3000, 1000, 5)
    commits.append({**commits[-1], "committed_offset": None, "at_ms": 5000, "offset": 99})
    kept = kept_commits(commits, [{"topic": None, "partition": 0, "at_ms": 1500}])
    assert [k["reasons"] for k in kept] == [["checkpoint"], ["deleted", "latest"]]


def test_a_deleted_consumer_group_starts_over_when_its_name_comes_back():
    rows = [_consumer_row(0, 1000, "ConsumerGroupCurrentMemberAssignment", {"memberId": "m"}, _assignment(1, [0])),
            _consumer_row(1, 2000, "ConsumerGroupMetadata", {}, None),
            _consumer_row(2, 3000, "ConsumerGroupCurrentMemberAssignment", {"memberId": "n"}, _assignment(1, [0]))]
    changes = consumer_ownership_changes(rows, {"T": "t"})
    assert [(c["kind"], c["previous_owner"], c["owner"], c["release_kind"]) for c in changes] == [
        ("assigned", None, "m", None), ("released", "m", None, "removed"), ("assigned", None, "n", None)]
    assert [e["kind"] for e in consumer_events(rows, {})] == ["partitions_assigned", "group_deleted",
                                                              "partitions_assigned"]
    assert consumer_events(rows, {})[0]["assigned"][0]["topic"] is None  # an id no source names stays unnamed
