"""The mixed phase of a staged KIP-848 migration against what the Kafka 4.2 broker did in
``kip848-migration`` (docs/measured.md, "The KIP-848 migration": four dynamic range members,
8 partitions, restarted on the consumer protocol one by one; the static variant moved nothing)."""
from __future__ import annotations

import pytest

from pipelines.simulator.assignors import assign
from pipelines.simulator.group import Member
from pipelines.simulator.migration import lands_first, layout_at, mixed_phase_rounds

pytestmark = pytest.mark.fast

COUNTS = {"orders": 8}


def _rounds(static: bool = False):
    members = [Member(f"m{i}", f"m{i}" if static else None, frozenset({"orders"})) for i in range(1, 5)]
    return mixed_phase_rounds(members, assign("classic:range", members, COUNTS), COUNTS, "classic:range",
                              "consumer:uniform", 0.5)


def test_each_epoch_bump_makes_every_eager_classic_member_give_back_all_it_holds():
    rounds = [r for r, _ in _rounds()]
    bumps = sorted({r.at_ms for r in rounds})
    assert len(bumps) == 8  # each member leaves (the first: a classic eager rebalance) and joins again
    back_to_self = {at: sorted({h.to for r in rounds if r.at_ms == at for h in r.handoffs if not h.moved})
                    for at in bumps}
    # observed, by epoch, the classic members that revoked everything: 4: m2 m3 m4 (m1 back); 5: m3 m4
    # (m2 gone); 6: m3 m4 (m2 back); 7: m4 (m3 gone); 8: m4 (m3 back); then no classic member is left
    assert [back_to_self[at] for at in bumps[1:]] == [["m2", "m3", "m4"], ["m3", "m4"], ["m3", "m4"], ["m4"], ["m4"],
                                                      [], []]
    # at epoch 4 they gave back 3 + 3 + 2 (range's layout after m1 left): every partition of the group
    assert sum(len(r.handoffs) for r in rounds if r.at_ms == bumps[1]) == 8
    # (the consumer-protocol members, m1 on from epoch 4, are in none: they give back only what moves)


def test_a_static_migration_moves_nothing_and_only_the_migrant_waits():
    rounds = _rounds(static=True)
    assert not any(r.group_rebalance for r, _ in rounds)  # observed: the generation stayed 2, no callback elsewhere
    assert all(not h.moved and h.kind == "bounce" and h.down_s == 0.5 for r, _ in rounds for h in r.handoffs)
    assert sorted(h.to for r, _ in rounds for h in r.handoffs) == ["m1", "m1", "m2", "m2", "m3", "m3", "m4", "m4"]


def test_the_layout_a_migration_starts_from_is_who_held_each_partition_then():
    """Now: each partition's latest owner; at a time: the owner then (a stopped group is planned as it
    formed: ``rules.running``)."""
    def interval(agent, partition, assigned, released):
        return {"agent_id": agent, "topic": "t", "partition": partition, "assigned_ms": assigned,
                "release_kind": None if released is None else "revoked", "released_ms": released}
    stopped = [interval("a", 0, 0, 5_000), interval("b", 0, 5_100, 9_000), interval("a", 1, 0, 9_000),
               interval("c", 2, 0, 4_000)]
    assert layout_at(stopped) == {"b": {("t", 0)}, "a": {("t", 1)}, "c": {("t", 2)}}
    assert layout_at(stopped, 3_000) == {"a": {("t", 0), ("t", 1)}, "c": {("t", 2)}}
    running = [*stopped[:3], interval("a", 2, 4_100, None)]
    assert layout_at(running) == {"b": {("t", 0)}, "a": {("t", 1), ("t", 2)}}


def test_a_first_migrant_back_before_its_scale_in_settles_makes_one_bump_and_waits_for_its_own_partitions():
    """P2 (scale-out-in under roundrobin, ground truth: m1's two partitions waited 0.76 s for m1 itself,
    m2 and m3 gave back theirs and got them back 0.02-0.10 s later, in one rebalance)."""
    members = [Member(f"m{i}", None, frozenset({"orders"})) for i in range(1, 4)]
    counts = {"orders": 6}
    owned = assign("classic:roundrobin", members, counts)
    settled, early = (mixed_phase_rounds(members, owned, counts, "classic:roundrobin", "consumer:uniform", 0.5, p2)
                      for p2 in (False, True))
    assert len({r.at_ms for r, _ in early}) == len({r.at_ms for r, _ in settled}) - 1 == 5
    first = [h for r, _ in early if r.at_ms == min(r.at_ms for r, _ in early) for h in r.handoffs]
    to_m1 = sorted((h.to, h.kind, h.moved, h.down_s) for h in first if h.to == "m1")
    assert to_m1 == [("m1", "bounce", False, 0.5)] * 2
    assert sorted(h.to for h in first if h.to != "m1") == ["m2", "m2", "m3", "m3"]  # given back, got back
    assert not any(h.moved for h in first)
    # settled first, the scale-in's round hands m1's partitions to the others, as a leaver's (a heartbeat's wait)
    scale_in = [h for r, _ in settled if r.at_ms == 0 for h in r.handoffs]
    assert sum(h.left and h.moved for h in scale_in) == 2


def test_the_chance_a_migrant_is_back_before_the_others_heartbeat():
    assert lands_first(0.0, 1.0, 2) == 1.0  # back at once: always first
    assert lands_first(0.25, 1.0, 2) == 0.75  # unless the others (in one phase) heartbeat within its 0.25 s
    assert lands_first(0.25, 1.0, 3) == 0.75  # however many they are
    assert lands_first(1.5, 1.0, 2) == 0.0  # away longer than a heartbeat: the round is done
    assert lands_first(0.5, 1.0, 0) == 0.0  # no one else: no round to finish


def test_a_cooperative_sticky_migration_is_priced_as_its_upgrade_goes_through():
    """Issue 51: a cooperative-sticky rolling restart's plan priced its mixed phase; once the first leave's
    classic round had run (generation 2), the model took librdkafka's user data as refusing the next
    migrant (R0) and then looked up a member the group no longer held (KeyError). A mixed phase is
    priced where the upgrade goes through (the Java client's assignments carry no user data; a librdkafka
    group's must first lose theirs: readiness ``sticky_user_data``), on either path of P2."""
    members = [Member(f"m{i}", None, frozenset({"orders"})) for i in range(1, 4)]
    counts = {"orders": 6}
    owned = assign("classic:cooperative-sticky", members, counts)
    for p2 in (False, True):
        rounds = mixed_phase_rounds(members, owned, counts, "classic:cooperative-sticky", "consumer:uniform", 0.5, p2)
        # every migrant's leave and join is a bump (P2: the first leave's round is the conversion's)
        assert len({r.at_ms for r, _ in rounds if r.group_rebalance}) == 6 - p2
        assert {h.to for r, _ in rounds for h in r.handoffs} == {"m1", "m2", "m3"}


def test_a_leavers_partitions_no_one_else_subscribes_to_wait_for_it():
    """A member alone on its topic: while it restarts on the consumer protocol nobody reads its
    partitions; they wait for it (a bounce of its time away), not a move to no one."""
    members = [Member("m1", None, frozenset({"orders"})), Member("m2", None, frozenset({"audit"}))]
    counts = {"orders": 2, "audit": 1}
    owned = assign("classic:range", members, counts)
    rounds = mixed_phase_rounds(members, owned, counts, "classic:range", "consumer:uniform", 0.5)
    waits = [h for r, _ in rounds for h in r.handoffs if h.kind == "bounce"]
    assert sorted((h.to, h.partition, h.down_s) for h in waits) == [
        ("m1", ("orders", 0), 0.5), ("m1", ("orders", 1), 0.5), ("m2", ("audit", 0), 0.5)]
    assert all(h.to for r, _ in rounds for h in r.handoffs)
