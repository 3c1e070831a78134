"""The KIP-848 readiness lint: each finding planted in one member's configuration, version,
subscription, callbacks or errors (synthetic telemetry, through gold's members and the recommend
pass) comes back named in the group's recommendations: its code, the member and the fix."""
from __future__ import annotations

import dataclasses

import pytest

from lens_scenarios.synthetic import P0, P1, Fleet, Member, tp
from pipelines.recommend import readiness
from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.judgement import Evidence
from pipelines.recommend.rules import recommend
from pipelines.recommend.what_if import what_if
from pipelines.simulator.cost_model import Priced
from pipelines.vocabulary import FINDING_CODES, FINDING_KINDS
from tests.support.fleets import eager_rolling_restarts, phased_eager, scale_out_then_crash
from tests.support.recommending import recommend_fleet
from tests.support.reference_ownership import gold_of_group

pytestmark = pytest.mark.fast


def _group(name: str, m2: dict | None = None, m1: dict | None = None) -> tuple[Fleet, Member, Member]:
    """Two classic range members, each with its partition, then m2 leaves and m1 takes both (a
    rebalance to price); ``m1``/``m2``: the members' settings (what is planted)."""
    fleet = Fleet(group=f"ready-{name}")
    a, b = fleet.member("m1", **(m1 or {})), fleet.member("m2", **(m2 or {}))
    a.at(0).joins().assigned(P0, generation=1).fetches(P0, 0)
    b.at(0).joins().assigned(P1, generation=1).fetches(P1, 0)
    a.at(5_000).processes(P0, upto=9).commits(P0, 10)
    b.at(5_000).processes(P1, upto=9).commits(P1, 10)
    return fleet, a, b


def _scale_in(a: Member, b: Member) -> None:
    b.at(60_000).leaves().revokes(P1)
    a.at(60_500).revokes(P0).at(61_000).assigned(P0, P1).fetches(P0, 10).fetches(P1, 10)


def _readiness_lines(fleet: Fleet) -> list[str]:
    """The evidence lines of the group's migration_readiness warning (rules.recommend's rows)."""
    _, found = recommend_fleet(fleet)
    warning = [r for r in found if r["kind"] == "migration_readiness"]
    assert len(warning) == 1, [r["kind"] for r in found]
    return warning[0]["evidence"]


def _named(lines: list[str], code: str, member: Member, *words: str) -> str:
    """The one line of ``code`` naming ``member`` that says each of ``words`` (the fix among them)."""
    who = f"{member.client_id} (agent {member.agent_id[-8:]})"
    hits = [line for line in lines if line.split(": ", 1)[0].endswith(f"] {code}") and who in line
            and all(word in line for word in words)]
    assert len(hits) == 1, (code, who, words, lines)
    return hits[0]


def test_refused_config_keys_are_named_with_librdkafkas_own_words_and_the_fix():
    fleet, a, b = _group("keys", m2={"config": {"session.timeout.ms": "6000", "partition.assignment.strategy": "range",
                                                "heartbeat.interval.ms": "1000", "max.poll.interval.ms": "30000"}})
    _scale_in(a, b)
    lines = _readiness_lines(fleet)
    _named(lines, "refused_config_key", b, "[blocking]", readiness.LIBRDKAFKA.refused_keys["session.timeout.ms"],
           "Fix: Remove session.timeout.ms", "group.consumer.session.timeout.ms")
    _named(lines, "refused_config_key", b, "`partition.assignment.strategy` is not supported for "
           "`group.protocol=consumer`. Use `group.remote.assignor` instead",
           "Fix: Remove partition.assignment.strategy")
    _named(lines, "refused_config_key", b, "heartbeat.interval.ms", "Fix: Remove heartbeat.interval.ms")
    assert not any("max.poll.interval.ms" in line for line in lines)  # a key the consumer protocol keeps
    assert not any(a.agent_id[-8:] in line for line in lines)  # m1 set none of them


@pytest.mark.parametrize(("version", "code", "severity"), [("2.10.1", "client_too_old", "blocking"),
                                                           ("2.13.0", "client_known_bugs", "warning")])
def test_an_old_librdkafka_is_named_with_its_version(version, code, severity):
    fleet, a, b = _group(f"version-{version}", m1={"librdkafka_version": version})
    _scale_in(a, b)
    lines = _readiness_lines(fleet)
    _named(lines, code, a, f"[{severity}]", f"librdkafka {version}", "Fix: Upgrade confluent-kafka")
    assert all(f"agent {b.agent_id[-8:]}" not in line for line in lines)  # m2 runs 2.16.1


def test_a_librdkafka_cooperative_sticky_group_is_told_to_migrate_offline_or_move_to_range_first():
    sticky = {"rebalance_protocol": "cooperative", "assignor": "cooperative-sticky"}
    fleet, a, b = _group("sticky", m1=sticky, m2=sticky)
    _scale_in(a, b)
    lines = _readiness_lines(fleet)
    for member in (a, b):
        _named(lines, "sticky_user_data", member, "[blocking]", "GROUP_ID_NOT_FOUND",
               "Fix: Migrate offline", "move the group to range first")


def test_a_consumer_protocol_member_the_cluster_refused_and_one_on_the_brokers_default_assignor():
    fleet, a, b = _group("refused")
    _scale_in(a, b)
    migrant = fleet.member("m3", group_protocol="consumer", rebalance_protocol="cooperative",
                           assignor="broker-default")
    migrant.at(70_000).joins().reports_error("GROUP_ID_NOT_FOUND", 69, "The group id does not exist", fatal=True)
    lines = _readiness_lines(fleet)
    _named(lines, "cluster_refused", migrant, "[blocking]", "reported GROUP_ID_NOT_FOUND",
           "policy itself is not in telemetry", "Fix: Check the brokers")
    _named(lines, "range_to_uniform", migrant, "[info]", "uniform", "Fix: Set group.remote.assignor=range")


def test_callbacks_that_call_assign_or_unassign_are_named_with_the_state_error():
    fleet, a, b = _group("calls", m2={"callback_calls": ("assign", "unassign")})
    _scale_in(a, b)
    lines = _readiness_lines(fleet)
    _named(lines, "eager_assign_calls", b, "[blocking]", "call assign() and unassign()", readiness.ASSIGN_REFUSED,
           "Fix: Remove the assign()/unassign() calls")


def test_incremental_calls_in_callbacks_are_no_finding():
    fleet, a, b = _group("incremental", m2={"callback_calls": ("incremental_assign",)})
    _scale_in(a, b)
    _, found = recommend_fleet(fleet)
    assert "migration_readiness" not in [r["kind"] for r in found]


def test_a_regex_subscription_names_the_topics_whose_match_changes():
    fleet, a, b = _group("regex", m2={"pattern": "^orders"})
    b.at(1_000).assigned(tp(0, "orders-eu")).fetches(tp(0, "orders-eu"), 0)
    _scale_in(a, b)
    lines = _readiness_lines(fleet)
    _named(lines, "regex_full_match", b, "[warning]", "orders-eu would no longer match", "Fix: Write the pattern",
           "(e.g. ^orders.*)")


def test_enforce_rebalance_calls_are_named():
    fleet, a, b = _group("enforce")
    a.at(30_000).requests_rebalance().revokes(P0)
    b.at(30_100).revokes(P1).at(31_000).assigned(P1).fetches(P1, 10)
    a.at(31_000).assigned(P0).fetches(P0, 10)
    lines = _readiness_lines(fleet)
    _named(lines, "enforce_rebalance", a, "[warning]", "called enforce_rebalance 1 times",
           "Fix: Stop calling enforce_rebalance")


def test_static_members_sharing_an_instance_id_at_the_same_time_and_not_a_restart():
    fleet, a, b = _group("shared", m1={"group_instance_id": "web-1"}, m2={"group_instance_id": "web-1"})
    _scale_in(a, b)
    lines = _readiness_lines(fleet)
    _named(lines, "shared_instance_id", b, "[blocking]", "group.instance.id=web-1",
           "Fix: Give every member its own group.instance.id")
    # a static member's restart (the old process gone before the new one starts) is no finding
    fleet, a, b = _group("restart", m2={"group_instance_id": "web-2"})
    b.at(60_000).leaves().revokes(P1)
    back = fleet.member("m2", host=b.host, client_id=b.client_id, group_instance_id="web-2")
    back.at(62_000).joins().assigned(P1).fetches(P1, 10)
    _, found = recommend_fleet(fleet)
    assert "migration_readiness" not in [r["kind"] for r in found]


def test_a_clean_group_gets_no_finding():
    fleet, a, b = _group("clean", m1={"config": {"max.poll.interval.ms": "30000"}})
    _scale_in(a, b)
    _, found = recommend_fleet(fleet)
    assert "migration_readiness" not in [r["kind"] for r in found]
    _, _, _, members = gold_of_group(fleet.events, gap_s=10.0)
    assert readiness.findings(members, {"orders"}) == []
    assert {m["librdkafka_version"] for m in members} == {"2.16.1"}  # what gold read is what was checked


def test_gold_members_carry_setting_names_never_their_values():
    fleet, a, b = _group("names", m2={"config": {"sasl.username": "alice", "session.timeout.ms": "6000"},
                                      "callback_calls": ("assign", "unassign", "assign")})
    _scale_in(a, b)
    _, _, _, members = gold_of_group(fleet.events, gap_s=10.0)
    row = next(m for m in members if m["agent_id"] == b.agent_id)
    assert row["config_keys"] == ["group.id", "sasl.username", "session.timeout.ms"]
    assert "alice" not in repr(row) and "'6000'" not in repr(row)  # the values, as the strings they were
    assert row["callback_calls"] == ["assign", "unassign"]  # distinct, first seen first


def _planted_move(fleet: Fleet, today: Priced | None = None):
    """The assignor recommendation that moves ``fleet``'s group to KIP-848 uniform: the group and its
    gold rows are real, the move's price is planted (no small synthetic fleet makes KIP-848 pay on
    its own: that is the what-if's business), and ``today``'s, the current configuration's, if given."""
    intervals, handoffs, episodes, members = gold_of_group(fleet.events, gap_s=10.0)
    w = what_if(members, handoffs, intervals, BrokerGroups())
    uniform = next(c for c in w.priced if c.setup.assignor == "consumer:uniform" and c.setup.static ==
                   w.current.setup.static and c.commit_on_revoke == w.current.commit_on_revoke
                   and c.setup.max_poll_interval_ms == w.current.setup.max_poll_interval_ms)
    planted = {uniform: Priced(1, 0, 0, 0.0, 0.0)} | ({w.current: today} if today else {})
    w = dataclasses.replace(w, priced={**w.priced, **planted})
    found = recommend(Evidence(fleet.group, members, handoffs, episodes, intervals, w, 1.0))
    move = next(r for r in found if r.kind == "assignor")
    assert move.config.setup.assignor == "consumer:uniform"
    return move


def test_a_move_to_the_consumer_protocol_waits_for_the_blocking_fixes():
    """The move puts each blocking fix first and says the migration waits."""
    fleet = scale_out_then_crash(group="ready-move")
    planted = {"session.timeout.ms": "6000"}
    for e in fleet.events:
        if e["kind"] == "member_config" and e["client_id"] == "m2":
            e["body"]["config"] = {**e["body"]["config"], **planted}
    move = _planted_move(fleet)
    # a move to KIP-848 on its own is staged as a plan's migration step is: its mixed phase priced, a canary
    assert move.mixed_phase is not None and move.mixed_phase.rebalances > 0
    assert any(line.startswith("Canary: apply it to one member (m") for line in move.rollout)
    assert any(line.startswith("During the mixed phase, roll back") for line in move.rollout)
    assert move.rollout[0].startswith("First fix the blocking readiness findings (1 below")
    assert move.rollout[1].startswith("[blocking] refused_config_key: m2 (agent ") and "Remove session.timeout.ms" \
        in move.rollout[1]
    assert any(line.startswith("The migration waits: 1 blocking readiness findings (refused_config_key)")
               for line in move.evidence)


def test_the_canary_s_chance_to_finish_its_leave_s_round_follows_the_group_s_restarts():
    """A dynamic group's restarts say how soon a canary is back: away 1 s against the others' 3 s
    heartbeat (taken together, in one phase), it is back first two times in three. A group that showed
    no restart is priced at the middle of the two outcomes, and says why."""
    restarted = _planted_move(eager_rolling_restarts())
    assert any("with a chance of 67% (its 1.00 s restart against the others' 3 s heartbeat)" in line
               for line in restarted.evidence)
    unseen = _planted_move(phased_eager(), today=Priced(2, 4, 2, 0.0, 5.0))
    assert any("The group showed no restart" in line and "middle of the two outcomes" in line
               for line in unseen.evidence)



def test_every_declared_finding_is_checked_and_only_those():
    """Each declared code is one the lint can write (a literal in readiness.py) and has its test above."""
    source = open(readiness.__file__).read()
    written = {code for code in FINDING_CODES if f'"{code}"' in source}
    assert written == set(FINDING_CODES)
    tests = open(__file__).read()
    assert all(f'"{f.code}"' in tests for f in FINDING_KINDS)
    with pytest.raises(ValueError, match="undeclared finding"):
        readiness.Finding("refused_config_key", "info", "m", "e", "f")  # its declared severity is blocking


# The Java client (the Java agent's members): each finding kind worded for it, or absent where the Java
# client does not behave as librdkafka does.
JAVA_RANGE = {"librdkafka_version": readiness.JAVA_LIBRDKAFKA_VERSION,
              "assignor": "org.apache.kafka.clients.consumer.RangeAssignor"}


def _java_group(name: str, m2: dict | None = None) -> tuple[Fleet, Member, Member]:
    fleet, a, b = _group(name, m1=JAVA_RANGE, m2={**JAVA_RANGE, **(m2 or {})})
    _scale_in(a, b)
    return fleet, a, b


def _java_findings(fleet: Fleet, topics: tuple[str, ...] = ("orders",)) -> list[readiness.Finding]:
    _, _, _, members = gold_of_group(fleet.events, gap_s=10.0)
    return readiness.findings(members, topics)


def test_a_java_members_refused_keys_quote_the_java_clients_config_exception():
    keys = {"session.timeout.ms": "6000", "partition.assignment.strategy": JAVA_RANGE["assignor"],
            "heartbeat.interval.ms": "1000", "group.protocol.type": "consumer"}
    fleet, a, b = _java_group("java-keys", m2={"config": keys})
    lines = _readiness_lines(fleet)
    for key in ("session.timeout.ms", "partition.assignment.strategy", "heartbeat.interval.ms"):
        # kafka-clients 4.2.0, run: ConfigException: session.timeout.ms cannot be set when group.protocol=CONSUMER
        _named(lines, "refused_config_key", b, "[blocking]", "new KafkaConsumer(...) throws ConfigException",
               f'"{key} cannot be set when group.protocol=CONSUMER"', f"Fix: Remove {key}")
    assert not any("librdkafka" in line or "group.protocol.type" in line for line in lines)  # not a Java key


def test_a_java_members_version_is_kafka_clients_and_only_before_4_0_blocks():
    fleet, a, b = _java_group("java-version")
    _, _, _, members = gold_of_group(fleet.events, gap_s=10.0)
    assert readiness.findings(members, ["orders"]) == []  # today's rows carry no kafka-clients version
    java = next(m for m in members if m["agent_id"] == a.agent_id)
    [old] = readiness.old_client({**java, "client_version": "kafka-clients 3.9.1"})
    assert (old.code, old.severity) == ("client_too_old", "blocking")
    assert old.evidence.startswith("It runs kafka-clients 3.9.1: the consumer protocol is generally available "
                                   "from 4.0 only (before: early access (3.7) or a preview (3.8, 3.9))")
    assert old.fix.startswith("Upgrade kafka-clients to 4.0 or later")
    # librdkafka's known-bugs warning (before 2.15) has no Java twin: client_known_bugs never for kafka-clients
    assert readiness.old_client({**java, "client_version": "kafka-clients 4.0.0"}) == []


def test_a_java_cooperative_sticky_group_converts_online_so_no_user_data_finding():
    """The broker refuses an assignment with user data; the Java client's assignors write none."""
    sticky = {**JAVA_RANGE, "assignor": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
              "rebalance_protocol": "cooperative"}
    fleet, a, b = _group("java-sticky", m1=sticky, m2=sticky)
    _scale_in(a, b)
    assert "sticky_user_data" not in [f.code for f in _java_findings(fleet)]


def test_a_java_migrant_the_cluster_refused_is_named_by_the_protocol_error():
    fleet, a, b = _java_group("java-refused")
    migrant = fleet.member("m3", group_protocol="consumer", rebalance_protocol="cooperative",
                           assignor="broker-default", librdkafka_version=readiness.JAVA_LIBRDKAFKA_VERSION)
    migrant.at(70_000).joins().reports_error("GROUP_ID_NOT_FOUND", 69, "GroupIdNotFoundException", fatal=True)
    lines = _readiness_lines(fleet)
    _named(lines, "cluster_refused", migrant, "[blocking]", "reported GROUP_ID_NOT_FOUND", "Fix: Check the brokers")
    # a classic range group (the Java client's RangeAssignor) with a migrant on the broker's default
    _named(lines, "range_to_uniform", migrant, "[info]", "uniform", "Fix: Set group.remote.assignor=range")


def test_java_members_sharing_an_instance_id_are_named_as_librdkafkas_are():
    fleet, a, b = _group("java-shared", m1={**JAVA_RANGE, "group_instance_id": "web-1"},
                         m2={**JAVA_RANGE, "group_instance_id": "web-1"})
    _scale_in(a, b)
    _named(_readiness_lines(fleet), "shared_instance_id", b, "[blocking]", "group.instance.id=web-1")


def test_a_java_listener_has_no_assign_call_and_a_java_pattern_keeps_matching_whole_names():
    """The Java client applies an assignment itself (``eager_assign_calls`` is librdkafka's), and it
    matches a ``java.util.regex.Pattern`` against whole names on either protocol (``regex_full_match``
    is librdkafka's anywhere-match becoming the broker's whole-name match)."""
    fleet, a, b = _java_group("java-regex", m2={"pattern": "^orders", "callback_calls": ("assign",)})
    b.at(1_000).assigned(tp(0, "orders-eu")).fetches(tp(0, "orders-eu"), 0)
    codes = [f.code for f in _java_findings(fleet, ("orders", "orders-eu"))]
    assert "regex_full_match" not in codes and "eager_assign_calls" not in codes
    fleet, a, b = _group("rdkafka-regex", m2={"pattern": "^orders", "callback_calls": ("assign",)})
    b.at(1_000).assigned(tp(0, "orders-eu")).fetches(tp(0, "orders-eu"), 0)
    _scale_in(a, b)
    assert {"regex_full_match", "eager_assign_calls"} <= {f.code for f in _java_findings(fleet, ("orders",
                                                                                                 "orders-eu"))}


def test_a_java_members_enforce_calls_quote_what_the_java_client_does_under_kip848():
    fleet, a, b = _group("java-enforce", m1=JAVA_RANGE, m2=JAVA_RANGE)
    a.at(30_000).requests_rebalance().revokes(P0)
    b.at(30_100).revokes(P1).at(31_000).assigned(P1).fetches(P1, 10)
    a.at(31_000).assigned(P0).fetches(P0, 10)
    _named(_readiness_lines(fleet), "enforce_rebalance", a, "[warning]", "called enforceRebalance() 1 times",
           '"Operation not supported in new consumer group protocol"', "Fix: Stop calling enforceRebalance()")
