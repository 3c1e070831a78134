"""Scenario files: every built-in loads, and a user's mistake names the key and the fix."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lens_runtime.errors import LensError
from lens_scenarios.spec import builtin_names, load, on_runtime, parse, restarted_as, without_agent

ACTIONS_COVERED = {"rolling_restart", "protocol_migration", "scale_out", "scale_in", "crash", "slow_processing",
                   "subscription_change", "enforce_rebalance"}


def test_at_least_six_builtins_load_and_cover_every_action():
    names = builtin_names()
    assert len(names) >= 6
    scenarios = [load(n) for n in names]
    assert {a.kind for s in scenarios for a in s.timeline} == ACTIONS_COVERED
    assert all(s.duration_s <= 60 for s in scenarios)
    static = load("static-rolling-restart")
    assert all(m.group_instance_id for m in static.members)


def _base() -> dict:
    return {"name": "mine", "topics": [{"name": "orders", "partitions": 4}], "members": ["a", "b"],
            "duration_s": 20, "timeline": [{"at": 2, "action": "crash", "members": ["a"]}]}


def test_a_user_file_is_loaded_by_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(_base()))
    scenario = load(str(path))
    assert scenario.name == "mine" and scenario.partitions == 4 and scenario.rate_per_partition == 50


@pytest.mark.parametrize("change, key, fix", [
    (lambda d: d.pop("topics"), "`topics`", "List the topics"),
    (lambda d: d["topics"][0].update(partitions=0), "`partitions`", "between 1 and 64"),
    (lambda d: d.update(rate=5), "`rate`", "rate_per_partition"),
    (lambda d: d["timeline"][0].update(action="explode"), "`timeline[0].action`", "crash"),
    (lambda d: d["timeline"][0].update(members=["zz"]), "`timeline[0].members`", "Use one of: a, b"),
    (lambda d: d["timeline"].append({"at": 3, "action": "scale_out"}), "`timeline[1].members`", "Add `members:`"),
    (lambda d: d.update(duration_s=1), "`duration_s`", "between 5 and 600"),
    (lambda d: d["timeline"][0].update(at=30), "`duration_s`", "Raise `duration_s`"),
    (lambda d: d.update(subscribe=["payments"]), "`subscribe`", "declare it under `topics`"),
    (lambda d: d.update(members=["a", "a"]), "`members`", "distinct name"),
    (lambda d: d.update(max_poll_interval_ms=1000), "`max_poll_interval_ms`", "between 7000"),
    (lambda d: d.update(members=["a", {"name": "b", "agent": "no"}]), "`members[1].agent`",
     "Set it to true (the rebalance-lens agent) or false (the plain confluent_kafka client)"),
    (lambda d: d["timeline"].append({"at": 3, "action": "scale_out", "members": [{"name": "c", "agent": 0}]}),
     "`timeline[1].members[0].agent`", "Set it to true"),
    (lambda d: d["timeline"][0].update(members=[{"name": "a", "agent": False}]), "`timeline[0].members[0].agent`",
     "a restart keeps what the member runs"),
    (lambda d: d.update(members=["a", {"name": "b", "runtime": "jvm"}]), "`members[1].runtime`",
     "Set it to python (confluent-kafka-python, the default), java (the Java client with the JVM agent) or app"),
    (lambda d: d.update(members=["a", {"name": "b", "runtime": "app"}]), "`members[1].app`",
     "Add `app: {command: [java, -jar, /path/to/app.jar]}`"),
    (lambda d: d.update(members=["a", {"name": "b", "runtime": "app", "app": {"command": ["./run.sh"]}}]),
     "`members[1].app.command`", "the java executable first"),
    (lambda d: d.update(members=["a", {"name": "b", "app": {"command": ["java", "-jar", "x.jar"]}}]),
     "`members[1].app`", "Add `runtime: app`, or remove `app`"),
    (lambda d: d["timeline"][0].update(members=[{"name": "a", "runtime": "java"}]),
     "`timeline[0].members[0].runtime`", "a restart keeps what the member runs; declare `runtime`"),
    (lambda d: d["timeline"].append({"at": 3, "action": "protocol_migration"}), "`timeline[1].to`",
     "Add `to:`"),
    (lambda d: d["timeline"].append({"at": 3, "action": "protocol_migration", "to": "kip848"}), "`timeline[1].to`",
     "Set it to consumer (migrate to KIP-848) or classic (roll back)"),
    (lambda d: d["timeline"].append({"at": 3, "action": "protocol_migration", "to": "consumer",
                                     "remote_assignor": "sticky"}), "`timeline[1].remote_assignor`",
     "Use one of: uniform, range"),
    (lambda d: d["timeline"].append({"at": 3, "action": "protocol_migration", "to": "classic",
                                     "remote_assignor": "range"}), "`timeline[1].remote_assignor`",
     "a classic member runs the scenario's client-side assignor"),
    (lambda d: d["timeline"].append({"at": 3, "action": "protocol_migration", "to": "consumer", "down_s": -1}),
     "`down_s`", "between 0 and 600"),
    (lambda d: d["timeline"].append({"at": 3, "action": "protocol_migration", "to": "consumer", "assignor": "x"}),
     "`timeline[1].assignor`", "remote_assignor"),
])
def test_mistakes_name_the_key_and_the_fix(change, key, fix):
    data = _base()
    change(data)
    with pytest.raises(LensError) as err:
        parse(data, source="mine.yaml")
    message = str(err.value)
    assert message.startswith("mine.yaml: ") and key in message and fix in message and "\n" not in message


def test_unknown_scenario_name_lists_the_builtins():
    with pytest.raises(LensError, match="rolling-restart"):
        load("no-such-scenario")


def test_bad_yaml_says_so(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(LensError, match="not valid YAML"):
        load(str(path))


def test_protocol_flag_picks_the_run_choice():
    from lens_runtime.errors import LensError
    from lens_scenarios.consumer_config import assignor_for

    assert assignor_for(None, None) == "range"
    assert assignor_for(None, "consumer") == "consumer"
    assert assignor_for("cooperative-sticky", "classic") == "cooperative-sticky"
    with pytest.raises(LensError, match="--protocol consumer .* lets the broker assign"):
        assignor_for("range", "consumer")
    with pytest.raises(LensError, match="--assignor consumer means the KIP-848 protocol"):
        assignor_for("consumer", "classic")


def test_a_member_can_run_the_plain_client_and_keeps_it_across_restarts():
    data = _base()
    data["members"] = ["a", {"name": "b", "agent": False}]
    data["timeline"] = [{"at": 2, "action": "rolling_restart", "members": ["b"]},
                        {"at": 4, "action": "crash", "members": ["b"], "restart_after_s": 1},
                        {"at": 6, "action": "scale_out", "members": [{"name": "c", "agent": False}, "d"]}]
    scenario = parse(data, source="mine.yaml")
    assert [(m.name, m.agent) for m in scenario.members] == [("a", True), ("b", False)]
    # a restart of b (named only) restarts the plain client; a scale-out declares its own
    assert [[(m.name, m.agent) for m in a.members] for a in scenario.timeline] == \
        [[("b", False)], [("b", False)], [("c", False), ("d", True)]]
    assert not scenario.fully_instrumented
    assert parse(_base(), source="mine.yaml").fully_instrumented


def test_a_member_can_run_on_the_jvm_and_keeps_it_across_restarts():
    data = _base()
    data["members"] = ["a", {"name": "b", "runtime": "java", "agent": False}]
    data["timeline"] = [{"at": 2, "action": "rolling_restart"},
                        {"at": 4, "action": "crash", "members": ["b"], "restart_after_s": 1},
                        {"at": 6, "action": "scale_out", "members": [{"name": "c", "runtime": "java"}, "d"]}]
    scenario = parse(data, source="mine.yaml")
    assert [(m.name, m.runtime, m.agent) for m in scenario.members] == [("a", "python", True), ("b", "java", False)]
    assert [[(m.name, m.runtime) for m in a.members or ()] for a in scenario.timeline[1:]] == \
        [[("b", "java")], [("c", "java"), ("d", "python")]]


def test_the_run_option_puts_every_member_on_the_jvm_and_a_bad_value_names_the_flag(tmp_path):
    from lens_scenarios.runner import RunOptions, run_scenario

    data = _base()
    data["timeline"] = [{"at": 2, "action": "crash", "members": ["a"], "restart_after_s": 1},
                        {"at": 6, "action": "scale_out", "members": ["c"]}]
    scenario = parse(data, source="mine.yaml")
    moved = on_runtime(scenario, "java")
    started = [*moved.members, *(m for a in moved.timeline for m in a.members or ())]
    assert {m.runtime for m in started} == {"java"} and {m.runtime for m in scenario.members} == {"python"}
    only_c = on_runtime(scenario, "java", frozenset({"c"}))
    assert [(m.name, m.runtime) for a in only_c.timeline for m in a.members] == [("a", "python"), ("c", "java")]
    with pytest.raises(LensError, match=r"^--runtime 'jvm' is not supported. Use one of: python, java, app.$"):
        run_scenario(scenario, RunOptions(out_dir=tmp_path, runtime="jvm"))
    with pytest.raises(LensError, match="runtime app and an app go together"):
        run_scenario(scenario, RunOptions(out_dir=tmp_path, runtime="app"))
    assert not list(tmp_path.iterdir())  # refused before anything ran


def test_an_application_member_runs_its_own_command_with_only_the_javaagent_added(monkeypatch):
    """A member that is an application of its own (a Spring Boot jar...): declared in YAML, kept by its restarts,
    and started as its command plus `-javaagent:` and the agent's options, its spec last."""
    from lens_scenarios import java_member

    data = _base()
    app = {"command": ["java", "-Xmx64m", "-jar", "app.jar"], "settings": {"listener": "batch"}}
    data["members"] = [{"name": "a", "runtime": "app", "app": app}, "b"]
    data["timeline"] = [{"at": 2, "action": "crash", "members": ["a"], "restart_after_s": 1}]
    scenario = parse(data, source="mine.yaml")
    [restarted] = scenario.timeline[0].members
    assert restarted.runtime == "app" and restarted.app == scenario.members[0].app
    assert dict(restarted.app.settings) == {"listener": "batch"}
    monkeypatch.setattr(java_member, "javaagent_jar", lambda: "/agent.jar")
    spec = {"agent": True, "config": {"group.id": "g", "lens.telemetry.topic": "t"}, "app": {"listener": "batch"}}
    argv = java_member.app_command(restarted.app, spec)
    assert argv[:-1] == ["java", "-javaagent:/agent.jar", "-Dlens.telemetry.topic=t", "-Xmx64m", "-jar", "app.jar"]
    assert json.loads(argv[-1]) == spec
    plain = java_member.app_command(restarted.app, {**spec, "agent": False})
    assert plain[:-1] == ["java", "-Xmx64m", "-jar", "app.jar"]  # a member without the agent: the command as given


def test_a_java_member_gets_the_same_settings_in_the_java_clients_words():
    from lens_scenarios.consumer_config import member_config
    from lens_scenarios.java_member import java_config

    common = dict(bootstrap="b:9092", group_id="g", commit="revoke", client_id="c", group_instance_id="i",
                  max_poll_interval_ms=10_000, telemetry_topic="t")
    classic = member_config(**common, assignor="cooperative-sticky")
    java = java_config(classic)
    assert java["partition.assignment.strategy"] == "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
    assert "lens.commit.on.revoke" not in java  # the Java member commits in its own listener
    assert java["max.poll.records"] == 500 and java["value.deserializer"].endswith("StringDeserializer")
    assert {k: v for k, v in java.items() if k in classic and k != "partition.assignment.strategy"} == \
        {k: v for k, v in classic.items() if k not in ("lens.commit.on.revoke", "partition.assignment.strategy")}
    consumer = java_config(member_config(**common, assignor="consumer"))
    assert "partition.assignment.strategy" not in consumer and consumer["group.protocol"] == "consumer"


def test_a_protocol_migration_moves_its_members_and_later_restarts_keep_the_new_protocol():
    data = _base()
    data["members"] = [{"name": "a", "group_instance_id": "a"}, "b"]
    data["timeline"] = [{"at": 2, "action": "protocol_migration", "to": "consumer", "remote_assignor": "range"},
                        {"at": 9, "action": "rolling_restart", "members": ["a"]},
                        {"at": 12, "action": "protocol_migration", "to": "classic", "members": ["b"],
                         "down_s": 1, "interval_s": 2}]
    scenario = parse(data, source="mine.yaml")
    migrate, restart, rollback = scenario.timeline
    assert migrate.members is None and migrate.params == {"to": "consumer", "remote_assignor": "range",
                                                          "down_s": 0.5, "interval_s": 6.0}
    # named by name only, a stays static and on the protocol it was moved to; b is rolled back from it
    assert [(m.name, m.group_instance_id, m.group_protocol, m.remote_assignor) for m in restart.members] == \
        [("a", "a", "consumer", "range")]
    assert [(m.name, m.group_protocol) for m in rollback.members] == [("b", "consumer")]
    assert [(restarted_as(rollback, m).group_protocol, restarted_as(rollback, m).remote_assignor)
            for m in rollback.members] == [("classic", None)]
    assert scenario.migrations == {"consumer", "classic"} and not parse(_base(), source="mine.yaml").migrations
    assert "kip848-migration" in builtin_names() and "kip848-migration" not in builtin_names(migrations=False)
    assert load("kip848-migration").migrations == {"consumer", "classic"}


def test_a_member_runs_the_protocol_a_migration_gave_it():
    from lens_scenarios.consumer_config import member_assignor, member_config

    assert [member_assignor("range", p) for p in (None, "classic", "consumer")] == ["range", "range", "consumer"]
    assert member_assignor("roundrobin", "consumer") == "consumer"
    assert member_assignor("consumer", "classic") == "range"  # rolled back in a KIP-848 run: the classic default
    common = dict(bootstrap="b:9092", group_id="g", commit="batch", client_id="c", group_instance_id=None,
                  max_poll_interval_ms=10_000, telemetry_topic="t")
    migrated = member_config(**common, assignor="consumer", remote_assignor="range")
    assert migrated["group.protocol"] == "consumer" and migrated["group.remote.assignor"] == "range"
    assert not {"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"} & set(migrated)
    assert "group.remote.assignor" not in member_config(**common, assignor="consumer")
    with pytest.raises(LensError, match="group.remote.assignor 'range' is KIP-848's") as err:
        member_config(**common, assignor="range", remote_assignor="range")
    assert "\n" not in str(err.value)


def test_a_cooperative_sticky_group_is_not_migrated_online():
    from lens_scenarios.consumer_config import check_online_upgrade
    from lens_scenarios.runner import RunOptions, run_scenario

    check_online_upgrade("range", "kip848-migration")
    check_online_upgrade("roundrobin", "kip848-migration")
    with pytest.raises(LensError, match="--assignor range or roundrobin") as err:
        # refused before anything starts: no broker, no run folder
        run_scenario(load("kip848-migration"), RunOptions(assignor="cooperative-sticky", out_dir=Path("/nonexistent")))
    assert "fatal GROUP_ID_NOT_FOUND" in str(err.value) and "\n" not in str(err.value)


def test_the_partial_adoption_builtin_is_listed_and_mixes_both_clients():
    scenario = load("partial-adoption")
    assert "partial-adoption" in builtin_names() and "partial-adoption" not in builtin_names(fully_instrumented=True)
    assert [m.agent for m in scenario.members].count(False) == 1 and len(scenario.members) == 4
    assert [a.kind for a in scenario.timeline] == ["rolling_restart", "scale_in", "scale_out"]
    assert all(not m.agent for a in scenario.timeline for m in a.members)


def test_a_plain_member_gets_no_agent_settings():
    from lens_scenarios.consumer_config import member_config

    common = dict(bootstrap="b:9092", group_id="g", assignor="range", commit="revoke", client_id="c",
                  group_instance_id=None, max_poll_interval_ms=10_000, telemetry_topic="t")
    instrumented, plain = member_config(**common), member_config(**common, agent=False)
    assert {k for k in instrumented if k.startswith("lens.")} and not {k for k in plain if k.startswith("lens.")}
    assert plain == {k: v for k, v in instrumented.items() if not k.startswith("lens.")}


def test_without_the_agent_every_member_a_scenario_ever_starts_runs_the_plain_client():
    for name in builtin_names():
        scenario = without_agent(load(name))
        started = [*scenario.members, *(m for a in scenario.timeline for m in a.members or ())]
        assert started and not any(m.agent for m in started), name
        assert [m.name for m in scenario.members] == [m.name for m in load(name).members]
