"""The history functions' rules on plain rows made by hand (no broker): what a real capture rarely
shows (failed rounds, a deleted group, an unknown assignor, a busy partition's commits)."""
from __future__ import annotations

from pipelines.broker_log.classic_history import classic_generations, classic_ownership_changes
from pipelines.broker_log.commit_window import KEEP_REASONS, KEPT_AFTER, KEPT_BEFORE, KEPT_PER_CHANGE, kept_commits
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


def _log(every_ms: int, end_ms: int, per_commit: int, change_times: list[int]) -> tuple[list[dict], list[dict]]:
    """A partition committed every ``every_ms`` and changing owner at ``change_times``, its records
    in log order (offsets by time): (commits, changes)."""
    events = sorted([(at, 1) for at in range(0, end_ms, every_ms)] + [(at, 0) for at in change_times])
    commits, changes = [], []
    for offset, (at, is_commit) in enumerate(events):
        place = {"topic": "t", "partition": 0, "at_ms": at, "offsets_partition": 0, "offset": offset}
        if is_commit:
            commits.append({**place, "group_id": "g", "committed_offset": len(commits) * per_commit,
                            "leader_epoch": -1, "commit_timestamp_ms": at})
        else:
            changes.append(place)
    return commits, changes


def test_commits_kept_are_bounded_per_change_whatever_the_commit_rate():
    hour = 3_600_000
    for every_ms in (1000, 100, 10):  # 1, 10 and 100 commits a second for an hour
        commits, changes = _log(every_ms, hour, 5, [600_500, 1_800_250, 3_000_010])
        kept = kept_commits(commits, changes)
        assert len(kept) <= KEPT_PER_CHANGE * len(changes), every_ms
        assert all(set(k["reasons"]) <= set(KEEP_REASONS) for k in kept)
    # every reason but a deleted offset's keeps a commit for the change before or after it, not both
    assert sorted(KEPT_BEFORE + KEPT_AFTER) == sorted(set(KEEP_REASONS) - {"deleted"})


def test_the_commits_around_a_change_are_the_ones_the_bounds_read():
    commits, changes = _log(1000, 10_000, 5, [4500])  # offsets 0, 5, ..., 45 at 0 s ... 9 s
    commits[5]["committed_offset"] = commits[4]["committed_offset"]  # the new owner first commits where it started
    kept = {k["at_ms"]: k["reasons"] for k in kept_commits(commits, changes, checkpoint_ms=1000)}
    # the previous owner's stop window opens at the commit before the one that reached its last offset
    assert kept == {1000: ["checkpoint"], 2000: ["checkpoint"], 3000: ["before_last_advance", "checkpoint"],
                    4000: ["before_change", "checkpoint", "last_advance"], 5000: ["after_change"],
                    6000: ["first_advance"]}


def test_the_last_advance_is_the_first_commit_of_a_repeated_offset():
    commits, changes = _log(1000, 8000, 5, [7500])  # offsets 0, 5, ..., 35
    for c in commits[4:]:
        c["committed_offset"] = 20  # an idle partition: the same offset committed again and again
    kept = {k["at_ms"]: k["reasons"] for k in kept_commits(commits, changes, checkpoint_ms=60_000)}
    assert "before_change" in kept[7000] and kept[4000] == ["last_advance"] and kept[3000] == ["before_last_advance"]


def test_a_deleted_offset_is_kept_and_a_nameless_topic_keeps_nothing():
    commits, changes = _log(1000, 3000, 5, [1500])
    commits.append({**commits[-1], "committed_offset": None, "at_ms": 5000, "offset": 99})
    kept = kept_commits(commits, [{**changes[0], "topic": None}])
    assert [k["reasons"] for k in kept] == [["deleted"]]


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


def test_a_partition_walk_counts_and_skips_what_the_schemas_cannot_read_and_keeps_tombstones():
    import struct

    from pipelines.broker_log.partition_walk import PartitionWalk
    from pipelines.broker_log.schema_set import schema_set

    def string16(text: str) -> bytes:
        return struct.pack(">h", len(text)) + text.encode()

    commit_key = struct.pack(">h", 1) + string16("g") + string16("t") + struct.pack(">i", 0)
    commit_v3 = struct.pack(">hqi", 3, 7, -1) + string16("") + struct.pack(">q", 1000)
    raw = [(struct.pack(">h", 99) + string16("g"), b"\x00\x00"),  # a type Kafka 4.2 does not have
           (commit_key, struct.pack(">h", 9) + b"\x00" * 20),  # a newer OffsetCommit value version
           (commit_key, b"\x00\x03\x00"),  # bytes that do not parse
           (commit_key, commit_v3), (commit_key, None)]  # a commit, then its offset deleted: a tombstone
    rows = [{"offsets_partition": 0, "offset": i, "timestamp_ms": 1000 + i, "key": k, "value": v, "group_id": None,
             "state": None, "through_offset": None} for i, (k, v) in enumerate(raw)]
    out = list(PartitionWalk(schema_set(), {}).walk(iter(rows)))
    counts = {(c["outcome"], c["record_type"], c["version"]): c["records"] for c in (r["count"] for r in out)
              if c is not None}
    assert counts == {("unknown_type", 99, None): 1, ("unknown_version", 1, 9): 1, ("malformed", 1, 3): 1,
                      ("decoded", 1, None): 2}
    kept = [r["commits"] for r in out if r["commits"] is not None]
    assert [(k["offset"], k["committed_offset"], k["reasons"]) for k in kept] == [(4, None, ["deleted"])]
    assert [r["state"]["group_id"] for r in out if r["state"] is not None] == ["g"]
