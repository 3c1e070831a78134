"""The truth reader on a small hand-made history: duplicates, intervals, handoffs, rebalances."""
from __future__ import annotations

from lens_scenarios.ground_truth import Played, duplicate_count, handoffs, ownership_intervals, rebalances
from lens_scenarios.truth_log import CallbackEvent, Delivery, TruthWriter, read_deliveries, read_events, \
    read_meta

MS = 1_000_000


def _d(process: str, offset: int, t_ms: int) -> Delivery:
    return Delivery(process, "t", 0, offset, offset, t_ms * MS, t_ms * MS, 0)  # produced long before


def _e(process: str, kind: str, t_ms: int, parts=(("t", 0),)) -> CallbackEvent:
    return CallbackEvent(process, kind, tuple(parts), t_ms * MS, t_ms * MS)


def test_a_handoff_with_redelivered_offsets_and_a_pause():
    # a.1 reads offsets 0..9 (one every 20 ms), is revoked at 250 ms having committed up to 5;
    # b.1 starts at offset 6 at 700 ms: offsets 6..9 come twice; a.1 let go at its revoke (250 ms),
    # so the pause is 700 - 250 ms (not from its last record at 180 ms: it was still processing).
    deliveries = [_d("a.1", o, o * 20) for o in range(10)] + [_d("b.1", o, 700 + (o - 6) * 20) for o in range(6, 12)]
    events = [_e("a.1", "assign", 0), _e("a.1", "revoke", 250), _e("b.1", "assign", 650)]
    intervals = ownership_intervals(deliveries, events, {"a.1": "a", "b.1": "b"})
    assert [(iv.process, iv.first_offset, iv.last_offset, iv.ended_by) for iv in intervals] == \
        [("a.1", 0, 9, "revoke"), ("b.1", 6, 11, "killed")]
    [h] = handoffs(intervals, events, [])
    assert (h.prev_member, h.next_member, h.last_offset_prev, h.first_offset_next, h.duplicates) == ("a", "b", 9, 6, 4)
    assert abs(h.pause_s - 0.45) < 1e-9 and h.moved
    assert duplicate_count(deliveries) == 4
    assert duplicate_count(deliveries, since_mono_ns=710 * MS) == 3


def test_an_eager_revoke_and_reassign_to_the_same_process_is_a_handoff_without_a_move():
    deliveries = [_d("a.1", 0, 0), _d("a.1", 1, 20), _d("a.1", 2, 400)]
    events = [_e("a.1", "assign", 0), _e("a.1", "revoke", 100), _e("a.1", "assign", 300)]
    [h] = handoffs(ownership_intervals(deliveries, events, {"a.1": "a"}), events, [])
    assert not h.moved and abs(h.pause_s - 0.30) < 1e-9  # revoked at 100 ms, next record at 400 ms


def test_a_killed_owner_pauses_from_its_last_record():
    deliveries = [_d("a.1", 0, 0), _d("a.1", 1, 20), _d("b.1", 0, 6000)]
    events = [_e("a.1", "assign", 0), _e("b.1", "assign", 5900)]
    [h] = handoffs(ownership_intervals(deliveries, events, {"a.1": "a", "b.1": "b"}), events, [])
    assert h.released_by == "killed" and h.duplicates == 2 and abs(h.pause_s - 5.98) < 1e-9
    assert h.cause == "crash"


def test_a_handoff_takes_its_cause_from_the_timeline():
    # c.1 stays and is revoked twice: after a scale-out at 1 s, then after b (stopped at 3 s) left;
    # b.1's own partition goes when it closes: the scale-in that stopped it.
    steps = [Played(1000 * MS, "scale_out", ("b",)), Played(3000 * MS, "scale_in", ("b",))]
    deliveries = [_d("c.1", 0, 0), _d("b.1", 1, 1500), _d("c.1", 2, 3200)]
    events = [_e("c.1", "assign", 0), _e("c.1", "revoke", 1100), _e("b.1", "assign", 1400),
              _e("b.1", "closing", 3000, ()), _e("b.1", "revoke", 3001), _e("c.1", "assign", 3100)]
    found = handoffs(ownership_intervals(deliveries, events, {"c.1": "c", "b.1": "b"}), events, steps)
    assert [(h.prev_member, h.next_member, h.cause) for h in found] == [("c", "b", "scale_out"), ("b", "c", "scale_in")]
    assert handoffs(ownership_intervals(deliveries, events, {"c.1": "c", "b.1": "b"}), events, [])[0].cause == "start"


def test_a_protocol_migration_is_its_own_cause_for_the_migrant_and_for_an_eager_member_it_revokes():
    # b (classic) is stopped at 1 s and comes back on the consumer protocol; its join bumps the
    # epoch and c, an eager classic member, gives back all it holds at 2 s and gets it back at 2.1 s.
    steps = [Played(1000 * MS, "protocol_migration", ("b",)), Played(1500 * MS, "protocol_migration", ("b",))]
    deliveries = [_d("b.1", 0, 0), _d("c.2", 1, 1200), _d("c.2", 2, 2300)]
    events = [_e("b.1", "assign", 0), _e("b.1", "closing", 1000, ()), _e("b.1", "revoke", 1001),
              _e("c.2", "assign", 1100), _e("c.2", "revoke", 2000), _e("c.2", "assign", 2100)]
    found = handoffs(ownership_intervals(deliveries, events, {"b.1": "b", "c.2": "c"}), events, steps)
    assert [(h.prev_process, h.next_process, h.cause, h.moved) for h in found] == \
        [("b.1", "c.2", "protocol_migration", True), ("c.2", "c.2", "protocol_migration", False)]


def test_own_start_and_close_are_not_rebalances_but_group_callbacks_are():
    events = [_e("a.1", "start", 0, ()), _e("a.1", "assign", 10),
              _e("a.1", "closing", 5000, ()), _e("a.1", "revoke", 5001), _e("a.2", "assign", 5600),
              _e("b.1", "assign", 9000), _e("b.1", "revoke", 9500), _e("b.1", "assign", 12000)]
    found = rebalances(events)
    # b.1's first assign is its own join; its revoke at 9.5 s and assign at 12 s are two rebalances
    assert [(r.processes, r.partitions_revoked, r.partitions_assigned) for r in found] == \
        [(("b.1",), 1, 0), (("b.1",), 0, 1)]


def test_the_writer_round_trips_and_drops_a_torn_row(tmp_path):
    writer = TruthWriter(tmp_path, "m1", "m1.1", ["orders"], group_protocol="consumer")
    writer.event("assign", [("orders", 2)])
    assert writer.records([("orders", 2, 10, 77, 5), ("orders", 2, 11, 78, 6)]) == 2
    writer.close()
    with open(tmp_path / "truth" / "m1.1.records", "ab") as f:
        f.write(b"\x00" * 7)  # a write cut short by SIGKILL
    [meta] = read_meta(tmp_path)
    assert meta.group_protocol == "consumer"
    rows = list(read_deliveries(tmp_path, meta))
    assert [(r.topic, r.partition, r.offset, r.record_id) for r in rows] == [("orders", 2, 10, 77),
                                                                             ("orders", 2, 11, 78)]
    assert [e.kind for e in read_events(tmp_path, meta)] == ["assign"]


def test_only_time_with_a_record_waiting_counts_as_a_pause():
    # a.1 revoked at 100 ms; b.1 assigned at 300 ms. Its first record, produced at 200 ms, waited
    # 200 -> 500 ms; had it been produced at 400 ms (after the assignment) nothing waited on the handoff.
    events = [_e("a.1", "assign", 0), _e("a.1", "revoke", 100), _e("b.1", "assign", 300)]
    for produced_ms, pause in ((200, 0.3), (400, 0.0), (50, 0.4)):
        deliveries = [_d("a.1", 0, 10), Delivery("b.1", "t", 0, 1, 1, 500 * MS, 500 * MS, produced_ms)]
        [h] = handoffs(ownership_intervals(deliveries, events, {"a.1": "a", "b.1": "b"}), events, [])
        assert abs(h.pause_s - pause) < 1e-9, produced_ms


def test_held_intervals_run_from_assign_to_release_and_coverage_weighs_them():
    from lens_scenarios.coverage import coverage, held_intervals

    # a.1 (agent) holds t/0 0-1000 ms (eager revoke), again 1500-4000 ms (exit);
    # p.1 (plain) holds t/1 from 0 ms and is killed: its last sign of life is a record at 2500 ms.
    events = [_e("a.1", "assign", 0), _e("a.1", "revoke", 1000), _e("a.1", "assign", 1500),
              _e("a.1", "exit", 4000, ()), _e("p.1", "assign", 0, (("t", 1),))]
    deliveries = [Delivery("p.1", "t", 1, 0, 100, 2500 * MS, 2500 * MS, 0)]
    held = held_intervals(events, deliveries, {"a.1": "a", "p.1": "p"}, {"a.1": True, "p.1": False})
    assert [(h.process, h.partition, h.start_mono_ns // MS, h.end_mono_ns // MS, h.ended_by, h.instrumented)
            for h in held] == [("a.1", 0, 0, 1000, "revoke", True), ("a.1", 0, 1500, 4000, "exit", True),
                               ("p.1", 1, 0, 2500, "killed", False)]
    cov = coverage(held)
    assert (cov.instrumented_s, cov.owned_s) == (3.5, 6.0) and abs(cov.share - 3.5 / 6.0) < 1e-12
    assert coverage([]).share is None


def test_coverage_by_hour_cuts_a_span_at_the_hour():
    from lens_scenarios.coverage import HOUR_NS, HeldInterval, coverage_by_hour

    hour = 500_000 * HOUR_NS
    agent = HeldInterval("t", 0, "a", "a.1", True, 0, 0, hour - 30 * 10**9, hour + 90 * 10**9, "exit")
    plain = HeldInterval("t", 1, "p", "p.1", False, 0, 0, hour + 30 * 10**9, hour + 60 * 10**9, "exit")
    by_hour = coverage_by_hour([agent, plain])
    assert list(by_hour) == [hour - HOUR_NS, hour]
    assert (by_hour[hour - HOUR_NS].instrumented_s, by_hour[hour - HOUR_NS].owned_s) == (30.0, 30.0)
    assert (by_hour[hour].instrumented_s, by_hour[hour].owned_s) == (90.0, 120.0)


def test_a_handoff_says_which_of_its_owners_ran_the_agent():
    deliveries = [_d("a.1", 0, 0), _d("a.1", 1, 20), _d("p.1", 2, 400)]
    events = [_e("a.1", "assign", 0), _e("a.1", "revoke", 100), _e("p.1", "assign", 300)]
    intervals = ownership_intervals(deliveries, events, {"a.1": "a", "p.1": "p"})
    [h] = handoffs(intervals, events, [], {"a.1": True, "p.1": False})
    assert (h.prev_instrumented, h.next_instrumented) == (True, False)
    [h] = handoffs(intervals, events, [])
    assert (h.prev_instrumented, h.next_instrumented) == (True, True)
