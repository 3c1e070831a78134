"""Small fleets whose costs are known by hand, shared by the pipeline tests."""
from __future__ import annotations

import random
import uuid

from lens_scenarios.synthetic import P0, P1, P2, P3, Fleet, Member


def with_own_ids(fleet: Fleet, seed: int) -> Fleet:
    """The fleet with event ids drawn from ``seed``: every builder here starts from the same
    seed, so two fleets' events share ids (validation would take the second for duplicates)."""
    rng = random.Random(seed)
    for event in fleet.events:
        event["event_id"] = uuid.UUID(int=rng.getrandbits(128)).hex
    return fleet


def scale_out_then_crash(group: str = "orders-app") -> Fleet:
    """m1 alone; m2 joins at 60 s (eager revoke-all); m2 crashes after 100 s and m1 takes P1 back at 165 s.

    Hand-computed: P0 m1->m1 pauses 0.7 s with 20 duplicates (processed to 99, committed 80);
    P1 m1->m2 pauses 0.8 s with no duplicate; P1 m2->m1 after the crash: at least 30 duplicates
    (m2 processed to 149, committed 120) and at most 61 (its ticks came every 10 s, so it died by
    110.25 s, the next one due plus the 0.25 s send allowance; the log grew at most 3 records/s past
    its last tick's end, 150: at most to 180); the pause within [54.95, 75.2] s (m1 reads at 165.2 s;
    m2's last record was handed out after its tick at 90 s and by 110.25 s).
    """
    fleet = Fleet(group=group)
    m1 = fleet.member("m1")
    m2 = fleet.member("m2")
    m1.at(0).joins().at(500).assigned(P0, P1, generation=1).at(600).fetches(P0, 0).fetches(P1, 0)
    m1.at(10_000).processes(P0, upto=99, interval_ms=10_000).commits(P0, 80)
    m1.processes(P1, upto=49, interval_ms=10_000).commits(P1, 50)
    m2.at(60_000).joins()
    m1.at(60_500).revokes(P0, P1, callback_ms=3.0)
    m1.at(61_000).assigned(P0, generation=2)
    m2.at(61_000).assigned(P1, generation=2)
    m1.at(61_200).fetches(P0, 80)
    m2.at(61_300).fetches(P1, 50)
    m2.at(90_000).processes(P1, upto=119, interval_ms=10_000).commits(P1, 120)
    m2.at(100_000).processes(P1, upto=149, interval_ms=10_000)
    m1.processes(P0, upto=99, interval_ms=10_000).commits(P0, 100)
    m1.at(164_500).revokes(P0, callback_ms=2.0)
    m1.at(165_000).assigned(P0, P1, generation=3)
    m1.at(165_200).fetches(P1, 120).fetches(P0, 100)
    m1.at(175_000).processes(P1, upto=300, interval_ms=10_000, lag=50)
    return fleet


def every_cause() -> dict[str, Fleet]:
    """One small fleet per episode cause, keyed by the cause its last episode must get."""
    fleets = {}

    def pair(cause: str, **m2_settings) -> tuple[Fleet, object, object]:
        fleet = Fleet(group=f"g-{cause}")
        m1, m2 = fleet.member("m1"), fleet.member("m2", **m2_settings)
        m1.at(0).joins().assigned(P0, generation=1).fetches(P0, 0)
        m2.at(0).joins().assigned(P1, generation=1).fetches(P1, 0)
        m1.at(5_000).processes(P0, upto=9)
        m2.at(5_000).processes(P1, upto=9)
        fleets[cause] = fleet
        return fleet, m1, m2

    _, m1, m2 = pair("scale_in")
    m2.at(60_000).leaves().revokes(P1)
    m1.at(60_500).revokes(P0).at(61_000).assigned(P0, P1).fetches(P0, 10).fetches(P1, 10)

    fleet, m1, m2 = pair("restart", group_instance_id="web-2")
    m2.at(60_000).leaves().revokes(P1)
    m2b = fleet.member("m2", host=m2.host, client_id=m2.client_id, group_instance_id="web-2")
    m2b.at(62_000).joins().assigned(P1).fetches(P1, 10)

    fleet, m1, m2 = pair("protocol_migration")  # m2 comes back on KIP-848's consumer protocol
    m2.at(60_000).leaves().revokes(P1)
    m2b = fleet.member("m2", host=m2.host, client_id=m2.client_id, group_protocol="consumer",
                       rebalance_protocol="cooperative", assignor="uniform")
    m2b.at(62_000).joins().assigned(P1).fetches(P1, 10)

    _, m1, m2 = pair("poll_interval_exceeded")
    m2.at(60_000).exceeds_poll_interval().loses(P1)
    m1.at(60_500).revokes(P0).at(61_000).assigned(P0, P1).fetches(P0, 10).fetches(P1, 8)

    _, m1, m2 = pair("subscription_change")
    m2.at(60_000).changes_subscription(("orders", "refunds")).revokes(P1)
    m1.at(60_500).revokes(P0).at(61_000).assigned(P0).fetches(P0, 10)
    m2.at(61_000).assigned(P1).fetches(P1, 10)

    _, m1, m2 = pair("enforced")
    m1.at(60_000).requests_rebalance().revokes(P0)
    m2.at(60_100).revokes(P1).at(61_000).assigned(P1).fetches(P1, 10)
    m1.at(61_000).assigned(P0).fetches(P0, 10)

    _, m1, m2 = pair("crash")
    m1.at(60_500).revokes(P0).at(61_000).assigned(P0, P1).fetches(P0, 10).fetches(P1, 5)
    return fleets


def busy_fleet() -> Fleet:
    """Classic eager group whose rebalances come 5-7 s apart (one cluster at a 10 s gap):
    a restart of m2 at 20 s (leave, then rejoin), m3 killed (found at 33 s), m4 joining at
    39 s, m1 changing its subscription at 45 s. Each round's handoffs have that round's cause."""
    fleet = Fleet(group="busy")
    m1, m2, m3 = fleet.member("m1"), fleet.member("m2"), fleet.member("m3")
    offsets = {p: 0 for p in (P0, P1, P2, P3)}

    def assign(t: int, generation: int, *plan: tuple) -> None:
        for member, parts in plan:
            member.at(t).assigned(*parts, generation=generation)
            for p in parts:
                member.fetches(p, offsets[p])
        for member, parts in plan:
            for p in parts:
                offsets[p] += 10
                member.at(t + 1_000).processes(p, upto=offsets[p] - 1).commits(p, offsets[p])

    def revoke_all(t: int, *members) -> None:
        for member in members:
            member.at(t).revokes(*list(member.owned))

    for m in (m1, m2, m3):
        m.at(0).joins()
    assign(500, 1, (m1, (P0, P1)), (m2, (P2,)), (m3, (P3,)))
    m2.at(20_000).leaves()
    revoke_all(20_000, m2)
    revoke_all(20_300, m1, m3)
    assign(20_600, 2, (m1, (P0, P1)), (m3, (P2, P3)))
    m2b = fleet.member("m2", host=m2.host, client_id=m2.client_id)
    m2b.at(21_000).joins()
    revoke_all(21_300, m1, m3)
    assign(21_600, 3, (m1, (P0, P1)), (m2b, (P2,)), (m3, (P3,)))
    # m3 is killed at 27 s: silent; the session times out at 33 s
    revoke_all(33_000, m1, m2b)
    assign(33_400, 4, (m1, (P0, P1)), (m2b, (P2, P3)))
    m4 = fleet.member("m4")
    m4.at(39_000).joins()
    revoke_all(39_300, m1, m2b)
    assign(39_600, 5, (m1, (P0,)), (m2b, (P1, P2)), (m4, (P3,)))
    m1.at(45_000).changes_subscription(("orders", "refunds"))
    revoke_all(45_000, m1)
    revoke_all(45_300, m2b, m4)
    assign(45_600, 6, (m1, (P0, P1)), (m2b, (P2,)), (m4, (P3,)))
    return fleet


def quiet_group() -> Fleet:
    """Three members form a group and consume for ten minutes: no rebalance after the start."""
    fleet = Fleet(group="quiet")
    members = [fleet.member(f"m{i}") for i in (1, 2, 3)]
    for i, m in enumerate(members):
        parts = (P0, P1, P2, P3)[i::3]
        m.at(0).joins().at(500).assigned(*parts, generation=1)
        for p in parts:
            m.fetches(p, 0)
        for minute in range(1, 11):
            for p in parts:
                (m.at(minute * 60_000).processes(p, upto=minute * 3_000 - 1, interval_ms=60_000)
                 .commits(p, minute * 3_000))
    return fleet


def static_cooperative_restarts(rounds: int = 3) -> Fleet:
    """A static, cooperative-sticky group with commit-on-revoke restarting each member in
    turn: each comes back in 1.5 s with its own partitions and no rebalance (the
    configuration the rules would pick for a restarting fleet)."""
    fleet = Fleet(group="static-coop")
    settings = {"rebalance_protocol": "cooperative", "assignor": "cooperative-sticky", "commit_on_revoke": True}
    members = [fleet.member(f"m{i}", group_instance_id=f"m{i}", **settings) for i in (1, 2, 3)]
    owned = {m.client_id: (P0, P1, P2, P3)[i::3] for i, m in enumerate(members)}
    done = {p: 0 for p in (P0, P1, P2, P3)}
    for m in members:
        m.at(0).joins().at(500).assigned(*owned[m.client_id], generation=1)
        for p in owned[m.client_id]:
            m.fetches(p, 0)
    t = 10_000
    for r in range(rounds):
        for i, m in enumerate(list(members)):
            parts = owned[m.client_id]
            for p in parts:
                done[p] += 500
                m.at(t).processes(p, upto=done[p] - 1, interval_ms=10_000)
            m.at(t + 100).leaves().revokes(*parts, committed_in_callback=True)
            back = fleet.member(m.client_id, host=m.host, client_id=m.client_id, group_instance_id=m.group_instance_id,
                                **settings)
            back.at(t + 1_600).joins().at(t + 1_700).assigned(*parts, generation=1)
            for p in parts:
                back.fetches(p, done[p])
            members[i] = back
            t += 10_000
    return fleet


def eager_rolling_restarts(rounds: int = 2) -> Fleet:
    """An eager range group of three dynamic members, each restarted in turn every 20 s (down 1 s),
    every restart revoking every partition of every member; each member processed 30 records
    past its last commit when it is revoked (batch commits): the re-deliveries commit-on-revoke
    saves, and the revokes a protocol with incremental rebalances saves."""
    fleet = Fleet(group="eager-rolling")
    members = [fleet.member(f"m{i}") for i in (1, 2, 3)]
    parts = (P0, P1, P2, P3)
    committed = {p: 0 for p in parts}  # where the next owner starts
    generation = 1

    def settle(t: int, live: list) -> None:
        nonlocal generation
        for i, m in enumerate(live):
            m.at(t).assigned(*parts[i::len(live)], generation=generation)
            for p in parts[i::len(live)]:
                m.fetches(p, committed[p])
        for i, m in enumerate(live):
            for p in parts[i::len(live)]:
                m.at(t + 5_000).commits(p, committed[p] + 100)
                m.at(t + 9_000).processes(p, upto=committed[p] + 129)
                committed[p] += 100
        generation += 1

    for m in members:
        m.at(0).joins()
    settle(500, members)
    t = 20_000
    for _ in range(rounds):
        for i, m in enumerate(list(members)):
            m.at(t).leaves()
            for other in members:
                other.at(t).revokes(*list(other.owned))
            rest = [x for x in members if x is not m]
            settle(t + 300, rest)
            back = fleet.member(m.client_id, host=m.host, client_id=m.client_id)
            back.at(t + 1_000).joins()
            for other in rest:
                other.at(t + 1_200).revokes(*list(other.owned))
            members[i] = back
            settle(t + 1_500, members)
            t += 20_000
    return fleet


def _callback(m: Member, kind: str, parts: tuple, begin_ms: int, callback_ms: float, into: str, after: str,
              generation: int | None = None, timing: dict | None = None) -> None:
    """One rebalance callback as the agent reports it (``consumer_agent.lifecycle``'s paths): the move
    ``into`` its callback state when the callback starts, the ``partitions_*`` event when it ends
    (``callback_ms`` later, carrying ``timing`` as its ``rebalance_timing``), the move to ``after`` at once."""
    reason = {"partitions_assigned": "assign callback", "partitions_revoked": "revoke callback"}[kind]
    m.at(begin_ms).state(into, reason)
    m.at(int(begin_ms + callback_ms))
    if kind == "partitions_assigned":
        m.assigned(*parts, callback_ms=callback_ms, generation=generation)
    else:
        m.revokes(*parts, callback_ms=callback_ms)
    if timing is not None:
        m.fleet.events[-1]["body"]["rebalance_timing"] = timing
    m.state_name = into  # the builder's own bookkeeping says stable after an assignment; the agent's is here
    if after != into:
        m.state(after, f"{reason} done")


def phased_eager() -> Fleet:
    """Eager range, the agent's states reported: m1 forms the group (joins at 0, its assign callback
    runs 400..500 ms); m2 joins at 60 s; m1's revoke callback runs 60.2..61.7 s, then it waits in
    joining with m2 until both assign callbacks start at 62 s (m1's takes 50 ms, m2's 20 ms).

    By construction, the second episode: m1 joined 0.3 s, in callbacks 1.55 s; m2 joined 2.0 s (it
    waited for m1's revoke), in callbacks 0.02 s: m2 is the slowest, 2.02 s of a 2.05 s episode."""
    fleet = Fleet(group="phases-eager")
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins()
    _callback(m1, "partitions_assigned", (P0, P1), 400, 100.0, "assigning", "stable")
    m2.at(60_000).joins()
    _callback(m1, "partitions_revoked", (P0, P1), 60_200, 1_500.0, "revoking", "joining")
    _callback(m1, "partitions_assigned", (P0,), 62_000, 50.0, "assigning", "stable", generation=2)
    _callback(m2, "partitions_assigned", (P1,), 62_000, 20.0, "assigning", "stable", generation=2)
    return fleet


def phased_cooperative() -> Fleet:
    """Cooperative-sticky, the agent's states reported: m1 owns P0..P3; m2 joins at 60 s. First round:
    m1's revoke callback of P2, P3 runs 60.3..60.5 s, m2's (empty) assign callback 60.3 s for 1 ms;
    second round: both assign callbacks start at 61 s (m1's empty, 1 ms; m2's P2, P3, 30 ms). m2 waits
    stable between the rounds: the agent sees no state there (librdkafka shows none to Python).

    By construction, the second episode: m1 in callbacks 0.201 s and joined 0.5 s (revoke done to its
    second assign): the slowest, 0.701 s; m2 joined 0.3 s, in callbacks 0.031 s."""
    fleet = Fleet(group="phases-coop")
    settings = {"rebalance_protocol": "cooperative", "assignor": "cooperative-sticky"}
    m1, m2 = fleet.member("m1", **settings), fleet.member("m2", **settings)
    m1.at(0).joins()
    _callback(m1, "partitions_assigned", (P0, P1, P2, P3), 400, 100.0, "assigning", "stable")
    m2.at(60_000).joins()
    _callback(m1, "partitions_revoked", (P2, P3), 60_300, 200.0, "revoking", "joining")
    _callback(m2, "partitions_assigned", (), 60_300, 1.0, "assigning", "stable", generation=2)
    _callback(m1, "partitions_assigned", (), 61_000, 1.0, "assigning", "stable", generation=3)
    _callback(m2, "partitions_assigned", (P2, P3), 61_000, 30.0, "assigning", "stable", generation=3)
    return fleet


def phased_consumer_protocol() -> Fleet:
    """KIP-848 (group.protocol=consumer), the states as the Java client names them: m1 owns P0..P3;
    m2 joins at 60 s. m1 reconciles from 60.4 s: its revoke callback of P2, P3 runs 100 ms, it is
    stable at 60.51 s. m2 heartbeats in joining until its assignment, reconciles from 61 s (assign
    callback 30 ms), acknowledges at 61.04 s and is stable at 61.05 s.

    By construction, the second episode: m2 joined 1.0 s, in callbacks 0.03 s, reconciled 0.02 s
    outside them: the slowest, 1.05 s; m1 in callbacks 0.1 s, reconciled 0.01 s."""
    fleet = Fleet(group="phases-kip848")
    settings = {"group_protocol": "consumer", "rebalance_protocol": "cooperative", "assignor": "uniform"}
    m1, m2 = fleet.member("m1", **settings), fleet.member("m2", **settings)
    m1.at(0).joins()
    _callback(m1, "partitions_assigned", (P0, P1, P2, P3), 400, 100.0, "reconciling", "stable")
    m2.at(60_000).joins()
    _callback(m1, "partitions_revoked", (P2, P3), 60_400, 100.0, "reconciling", "reconciling")
    m1.at(60_510).state("stable", "reconciled")
    _callback(m2, "partitions_assigned", (P2, P3), 61_000, 30.0, "reconciling", "reconciling", generation=2)
    m2.at(61_040).state("acknowledging", "reconciled")
    m2.at(61_050).state("stable", "acknowledged")
    return fleet


def _steps(join_ms: float, assign_ms: float, sync_ms: float, coordinator: bool = True) -> dict:
    """A classic rebalance_timing of one rebalance: its steps (the -javaagent), or its total only (the library)."""
    total = join_ms + assign_ms + sync_ms
    steps = (join_ms, assign_ms, sync_ms) if coordinator else (None, None, None)
    return {"source": "client_coordinator" if coordinator else "client_metrics", "rebalances": 1,
            "rebalance_ms": float(round(total)), "join_ms": steps[0], "assign_ms": steps[1], "sync_ms": steps[2],
            "reconcile_ms": None}


def timed_cooperative(coordinator: bool = True) -> Fleet:
    """Cooperative-sticky Java members whose clients timed each rebalance (the Java agent's states: nothing is
    seen of a join until a callback). m1 owns P0..P3; m2 joins at 60 s. Round 1: m2's JoinGroup at 60.05 s, m1's
    at 60.1 s, both answered at 60.2 s; m1 leads, assigns 10 ms; SyncGroup answered at 60.23 s; m1's revoke
    callback of P2, P3 (200 ms) and m2's empty assign callback (1 ms) start at 60.231 s. Round 2: m1's JoinGroup
    at 60.433 s, m2's at 60.5 s, answered at 60.6 s; m1 assigns 5 ms; synced at 60.62 s; both assign callbacks
    start at 60.621 s (m1's empty, 1 ms; m2's P2, P3, 30 ms). ``coordinator`` False: the library's timings.

    By construction, the second episode: m1 joined 130 + 188 ms (JoinGroup 267, its assignments 15, SyncGroup
    36), in callbacks 201 ms: the slowest; m2 joined 180 + 120 ms, in callbacks 31 ms."""
    fleet = Fleet(group="timed-coop")
    settings = {"rebalance_protocol": "cooperative", "assignor": "cooperative-sticky"}
    m1, m2 = fleet.member("m1", **settings), fleet.member("m2", **settings)
    m1.at(0).joins()
    _callback(m1, "partitions_assigned", (P0, P1, P2, P3), 400, 100.0, "assigning", "stable",
              timing=_steps(300, 5, 20, coordinator))
    m2.at(60_000).joins()
    _callback(m1, "partitions_revoked", (P2, P3), 60_231, 200.0, "revoking", "joining",
              timing=_steps(100, 10, 20, coordinator))
    _callback(m2, "partitions_assigned", (), 60_231, 1.0, "assigning", "stable", generation=2,
              timing=_steps(150, 0, 30, coordinator))
    _callback(m1, "partitions_assigned", (), 60_621, 1.0, "assigning", "stable", generation=3,
              timing=_steps(167, 5, 16, coordinator))
    _callback(m2, "partitions_assigned", (P2, P3), 60_621, 30.0, "assigning", "stable", generation=3,
              timing=_steps(100, 0, 20, coordinator))
    return fleet


def timed_crash() -> Fleet:
    """Eager Java members: m2 crashes unseen at 100 s; at 145 s m1's client rejoins (its JoinGroup answered in 10 ms,
    it assigns 1 ms, synced 9 ms later) and its assign callback (5 ms) starts at 145.021 s: the first the episode
    shows, 20 ms after its rebalance began."""
    fleet = Fleet(group="timed-crash")
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins()
    _callback(m1, "partitions_assigned", (P0, P1, P2, P3), 400, 10.0, "assigning", "stable", timing=_steps(300, 5, 20))
    m2.at(60_000).joins()
    _callback(m1, "partitions_revoked", (P0, P1, P2, P3), 60_100, 10.0, "revoking", "joining")
    _callback(m1, "partitions_assigned", (P0, P1), 60_400, 10.0, "assigning", "stable", generation=2,
              timing=_steps(250, 5, 30))
    _callback(m2, "partitions_assigned", (P2, P3), 60_400, 10.0, "assigning", "stable", generation=2,
              timing=_steps(300, 0, 35))
    _callback(m1, "partitions_assigned", (P0, P1, P2, P3), 145_021, 5.0, "assigning", "stable", generation=3,
              timing=_steps(10, 1, 9))
    return fleet


def timed_consumer_protocol() -> Fleet:
    """KIP-848 Java members with the -javaagent: m1 owns P0..P3; m2 joins at 60 s. m1's client receives its new
    target at 60.1 s: its revoke callback of P2, P3 runs 60.4..60.5 s (reconciling for 300 ms before it), its
    empty assign callback at 60.501 s (1 ms). m2's assignment arrives at 60.8 s; its assign callback (P2, P3, 30 ms)
    starts at 61 s.

    By construction, the second episode: m2 joined 800 ms (until its assignment), reconciled 200 ms, in callbacks
    30 ms: the slowest; m1 reconciled 401 - 100 ms outside its callbacks, in callbacks 101 ms."""
    fleet = Fleet(group="timed-kip848")
    settings = {"group_protocol": "consumer", "rebalance_protocol": "cooperative", "assignor": "uniform"}
    m1, m2 = fleet.member("m1", **settings), fleet.member("m2", **settings)

    def reconciling(ms: float) -> dict:
        return {"source": "client_coordinator", "rebalances": None, "rebalance_ms": None, "join_ms": None,
                "assign_ms": None, "sync_ms": None, "reconcile_ms": ms}
    m1.at(0).joins()
    _callback(m1, "partitions_assigned", (P0, P1, P2, P3), 400, 100.0, "reconciling", "stable",
              timing=reconciling(50.0))
    m2.at(60_000).joins()
    _callback(m1, "partitions_revoked", (P2, P3), 60_400, 100.0, "reconciling", "stable", timing=reconciling(300.0))
    _callback(m1, "partitions_assigned", (), 60_501, 1.0, "reconciling", "stable", generation=2,
              timing=reconciling(401.0))
    _callback(m2, "partitions_assigned", (P2, P3), 61_000, 30.0, "reconciling", "stable", generation=2,
              timing=reconciling(200.0))
    return fleet
