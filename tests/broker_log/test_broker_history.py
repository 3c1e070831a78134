"""History rebuilt from the records the embedded broker wrote for real groups, checked against what
the groups' own members saw (tests/support/offsets_capture.py: each step's owners and commits)."""
from __future__ import annotations

from pipelines.broker_log.classic_history import classic_generations, classic_ownership_changes
from pipelines.broker_log.commit_window import commit_rows, kept_commits
from pipelines.broker_log.consumer_history import consumer_events, consumer_ownership_changes
from tests.support.offsets_capture import PARTITIONS, Capture


def _owners_at(changes: list[dict], at_ms: int) -> dict[int, str]:
    """partition -> owner after every change up to ``at_ms``."""
    owners: dict[int, str] = {}
    for change in changes:
        if change["at_ms"] <= at_ms:
            owners[change["partition"]] = change["owner"]
    return {p: o for p, o in owners.items() if o is not None}


def _check_owners_match_the_members(capture: Capture, scenario: str, changes: list[dict]) -> None:
    steps = [s for s in capture.steps if s.group == capture.groups[scenario]]
    assert steps
    for step in steps:
        seen = {p: step.member_ids[name] for name, parts in step.owners.items() for p in parts}
        assert _owners_at(changes, step.at_ms) == seen, step.what
    assert {c["topic"] for c in changes} == {capture.topic}


def test_classic_eager_generations_and_handoffs(offsets_capture, captured_rows):
    generations = classic_generations(captured_rows["eager"])
    assert [(g["kind"], g["generation"]) for g in generations] == [
        ("empty", 0), ("generation", 1), ("generation", 2), ("generation", 3), ("empty", 4)]
    for gen in generations[1:4]:
        assert gen["assignor"] == "range" and gen["rebalance_protocol"] == "eager" and gen["failed_rounds"] == 0
        assert gen["join_completed_ms"] <= gen["synced_ms"]
        for member in gen["members"]:
            assert member["client_id"] == "rdkafka" and member["client_host"].endswith("127.0.0.1")
            assert member["session_timeout_ms"] == 6000 and member["subscribed_topics"] == [offsets_capture.topic]
    assert len(generations[2]["joined"]) == 1 and len(generations[3]["left"]) == 1
    changes = classic_ownership_changes(generations)
    _check_owners_match_the_members(offsets_capture, "eager", changes)
    # an eager round stops every partition: the two its owner kept are handoffs to itself
    second = [c for c in changes if c["generation"] == 2]
    assert sorted(c["kind"] for c in second) == ["assigned", "assigned", "reassigned", "reassigned"]
    assert all(c["released_ms"] is None and c["join_completed_ms"] == generations[2]["join_completed_ms"]
               for c in second)
    assert [c["kind"] for c in changes if c["generation"] == 4] == ["released"] * PARTITIONS


def test_classic_cooperative_rounds_release_then_assign(offsets_capture, captured_rows):
    generations = classic_generations(captured_rows["cooperative"])
    assert all(g["rebalance_protocol"] == "cooperative" for g in generations if g["kind"] == "generation")
    changes = classic_ownership_changes(generations)
    _check_owners_match_the_members(offsets_capture, "cooperative", changes)
    moved = [c for c in changes if c["kind"] == "assigned" and c["release_kind"] == "revoked"]
    assert len(moved) == 2, "b's two partitions: revoked in one generation, assigned in the next"
    for change in moved:
        released = next(g for g in generations if g["synced_ms"] == change["released_ms"])
        assert change["generation"] == released["generation"] + 1
        assert change["previous_since_ms"] < change["released_ms"] < change["join_completed_ms"] <= change["at_ms"]
    assert not [c for c in changes if c["kind"] == "reassigned"]


def test_classic_static_member_replaced_at_the_same_generation(offsets_capture, captured_rows):
    generations = classic_generations(captured_rows["static"])
    step = next(s for s in offsets_capture.steps if s.group == offsets_capture.groups["static"]
                and s.what == "b restarted")
    old_b = next(s for s in offsets_capture.steps if s.group == step.group and s.what == "a and b").member_ids["b"]
    replacement = next(g for g in generations if g["kind"] == "static_replacement")
    assert replacement["replaced"] == [{"old_member_id": old_b, "new_member_id": step.member_ids["b2"]}]
    assert replacement["generation"] == generations[generations.index(replacement) - 1]["generation"]
    assert replacement["joined"] == replacement["left"] == []
    changes = classic_ownership_changes(generations)
    _check_owners_match_the_members(offsets_capture, "static", changes)
    assert sorted(c["partition"] for c in changes if c["kind"] == "replaced") == step.owners["b2"]


def test_consumer_protocol_revocation_acknowledgement_and_assignment(offsets_capture, captured_rows):
    rows, names = captured_rows["consumer"], offsets_capture.topic_ids
    events = consumer_events(rows, names)
    kinds = [e["kind"] for e in events]
    for kind in ("member_joined", "group_epoch", "target_assignment", "revocation_requested",
                 "revocation_acknowledged", "partitions_assigned", "awaiting_release", "assignment_removed",
                 "member_removed"):
        assert kind in kinds, kind
    assert {e["member_state"] for e in events if e["kind"] == "revocation_requested"} == {"unrevoked_partitions"}
    assert [e["group_epoch"] for e in events if e["kind"] == "group_epoch"] == [1, 2, 3, 4]
    changes = consumer_ownership_changes(rows, names)
    _check_owners_match_the_members(offsets_capture, "consumer", changes)
    handoffs = [c for c in changes if c["kind"] == "assigned" and c["release_kind"] == "revoked"]
    assert len(handoffs) == 2
    for change in handoffs:
        assert change["previous_since_ms"] < change["revoke_requested_ms"] <= change["released_ms"] <= change["at_ms"]
        assert change["topic_id"] and change["topic"] == offsets_capture.topic
    left = [c for c in changes if c["release_kind"] == "removed" and c["kind"] == "assigned"]
    assert len(left) == 2 and all(c["revoke_requested_ms"] is None for c in left)


def test_consumer_protocol_static_member_leaves_and_is_replaced(offsets_capture, captured_rows):
    rows, names = captured_rows["static_consumer"], offsets_capture.topic_ids
    steps = [s for s in offsets_capture.steps if s.group == offsets_capture.groups["static_consumer"]]
    old_b, new_b = steps[0].member_ids["b"], steps[1].member_ids["b2"]
    events = consumer_events(rows, names)
    assert any(e["kind"] == "static_leave" and e["member_id"] == old_b and e["member_epoch"] == -2 for e in events)
    joined = next(e for e in events if e["kind"] == "static_replacement")
    assert (joined["member_id"], joined["replaces_member_id"]) == (new_b, old_b)
    epochs = [e["group_epoch"] for e in events if e["kind"] == "group_epoch"]
    assert epochs == sorted(set(epochs)) and len(epochs) == 2, "a replacement bumps no epoch"
    changes = consumer_ownership_changes(rows, names)
    _check_owners_match_the_members(offsets_capture, "static_consumer", changes)
    replaced = [c for c in changes if c["kind"] == "replaced"]
    assert sorted(c["partition"] for c in replaced) == steps[1].owners["b2"]
    assert all((c["previous_owner"], c["owner"], c["release_kind"]) == (old_b, new_b, "static_leave") for c in replaced)


def test_every_commit_is_read_and_kept_around_each_change(offsets_capture, captured_rows):
    for scenario in ("eager", "cooperative", "static", "consumer", "static_consumer"):
        rows = captured_rows[scenario]
        commits = commit_rows(rows)
        group = offsets_capture.groups[scenario]
        for step in (s for s in offsets_capture.steps if s.group == group):
            for partition, offset in step.committed.items():
                assert any(c["partition"] == partition and c["committed_offset"] == offset for c in commits)
        classic = scenario in ("eager", "cooperative", "static")
        changes = (classic_ownership_changes(classic_generations(rows)) if classic
                   else consumer_ownership_changes(rows, offsets_capture.topic_ids))
        kept = kept_commits(commits, changes)
        for change in changes:
            before = [c for c in commits if c["partition"] == change["partition"] and c["at_ms"] < change["at_ms"]]
            if before:
                last = max(before, key=lambda c: (c["at_ms"], c["offset"]))
                assert "before_change" in next(k for k in kept if k["offset"] == last["offset"])["reasons"]
