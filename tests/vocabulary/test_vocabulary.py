"""Each enumeration is declared once (``pipelines.vocabulary``, the telemetry contract): the dbt
YAML's accepted_values, the report's colours and labels, the CLI's choices, the rules' kinds,
the simulator's assignors and the scenario runner's words follow it. No Spark, no broker."""
from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest
import yaml

from consumer_agent.contract import GROUP_PROTOCOLS, REBALANCE_PROTOCOLS
from lens_cli.main import build_parser
from lens_runtime.errors import LensError
from pipelines import vocabulary, vocabulary_yaml
from pipelines.vocabulary import (ASSIGNOR_NAMES, CAUSE_NAMES, CAUSES, ENUMERATIONS, INTERVAL_RELEASE_KINDS,
                                  RECOMMENDATION_KIND_NAMES, RELEASE_KINDS, VERIFIABLE_KINDS)

ROOT = Path(__file__).resolve().parents[2]
# Columns whose name says which enumeration their accepted_values follow (``kind`` and
# ``assignor`` mean different things in different models: their lists are checked by content).
COLUMN_ENUMERATION = {"cause": "causes", "release_kind": "release_kinds", "group_protocol": "group_protocols",
                      "grain": "grains", "confidence": "confidence_levels", "source": "figure_sources"}


def _accepted_values(path: Path) -> list[tuple[str, list[str], str | None]]:
    """(column, its accepted values, the enumeration its marker names) for every list in one file: a
    test's ``accepted_values`` list, or a mart's ``accepted_values_<column>`` check constraint."""
    markers = [m["name"] for line in path.read_text().splitlines()
               if (m := vocabulary_yaml.MARKER.match(line) or vocabulary_yaml.EXPRESSION_MARKER.match(line))]
    lists: list[tuple[str, list[str]]] = []

    def walk(node: object, named: str) -> None:  # in document order, under the nearest ``name``
        if isinstance(node, dict):
            named = node.get("name", named) if isinstance(node.get("name"), str) else named
            if "accepted_values" in node:
                lists.append((named, node["accepted_values"]["arguments"]["values"]))
            if node.get("type") == "check" and named.startswith("accepted_values_"):
                lists.append((named.removeprefix("accepted_values_"),
                              vocabulary_yaml.expression_values(node["expression"])))
            for value in node.values():
                walk(value, named)
        elif isinstance(node, list):
            for value in node:
                walk(value, named)

    walk(yaml.safe_load(path.read_text()), "")
    assert len(markers) == len(lists), f"{path}: every accepted_values list needs a '# vocabulary: NAME' marker"
    return [(column, values, marker) for (column, values), marker in zip(lists, markers)]


def test_every_accepted_values_list_in_the_dbt_yaml_is_a_declared_enumeration():
    found = [(path, *entry) for path in vocabulary_yaml.yaml_files() for entry in _accepted_values(path)]
    assert len(found) >= 12  # causes four times, release kinds, kinds, protocols, assignors, grains, confidence
    for path, column, values, marker in found:
        assert values == list(ENUMERATIONS[marker]), (path, column, "run: python -m pipelines.vocabulary_yaml --write")
        assert marker == COLUMN_ENUMERATION.get(column, marker), (path, column)
    assert {marker for *_, marker in found} == set(ENUMERATIONS), "an enumeration no YAML list follows"


def test_the_yaml_lists_are_current():
    assert vocabulary_yaml.stale() == [], "run: python -m pipelines.vocabulary_yaml --write"


def test_any_change_to_a_declaration_makes_its_yaml_lists_stale(tmp_path):
    added = {**ENUMERATIONS, "causes": (*CAUSE_NAMES, "network_partition")}
    renamed = {**ENUMERATIONS, "release_kinds": ("revoked", "lost", "killed")}
    cause_files = {p.name for p in vocabulary_yaml.yaml_files() if "# vocabulary: causes" in p.read_text()}
    assert len(cause_files) == 4
    assert {p.name for p in vocabulary_yaml.stale(added)} == cause_files
    assert [p.name for p in vocabulary_yaml.stale(renamed)] == ["stg_lens__handoffs.yml"]
    # and --write's rendering puts the declaration there, read back by YAML as those strings
    handoffs = next(p for p in vocabulary_yaml.yaml_files() if p.name == "stg_lens__handoffs.yml")
    written = tmp_path / "stg_lens__handoffs.yml"
    written.write_text(vocabulary_yaml.render(handoffs.read_text(), renamed))
    assert [v for c, v, _ in _accepted_values(written) if c == "release_kind"] == [["revoked", "lost", "killed"]]
    with pytest.raises(ValueError, match="names no enumeration"):
        vocabulary_yaml.render("values:  # vocabulary: colours\n- red\n")


def test_every_declared_cause_has_its_own_colour_and_label_in_the_report():
    from tuning_report.figures import CAUSE_COLOURS, CAUSE_LABELS, cause_label

    assert list(CAUSE_COLOURS) == list(CAUSE_LABELS) == list(CAUSE_NAMES)
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c.colour) for c in CAUSES)
    assert len({c.colour for c in CAUSES}) == len({c.label for c in CAUSES}) == len(CAUSES)
    assert cause_label("poll_interval_exceeded") == "poll timeout (stall)"


def test_gold_and_ground_truth_use_the_declared_causes_and_release_kinds():
    from lens_scenarios.ground_truth import ACTION_CAUSES
    from pipelines.gold.causes import PRECEDENCE
    from pipelines.gold.ownership import RELEASING

    assert PRECEDENCE == CAUSE_NAMES  # the declaration's order is gold's precedence
    assert set(ACTION_CAUSES.values()) <= set(CAUSE_NAMES)
    assert set(RELEASING.values()) <= set(INTERVAL_RELEASE_KINDS)
    assert set(RELEASE_KINDS) - {"crash"} <= set(INTERVAL_RELEASE_KINDS)  # gold/handoffs: unreleased is a crash


def test_the_modelled_classic_assignors_hand_over_as_the_agent_spec_says_they_do():
    """The lens models classic assignors by the names the agent spec's client_assignors give them, and each one's
    rebalance protocol is the spec's (what both agents label a member with): declared twice, checked once here."""
    from consumer_agent.agent_spec import assignor_protocols, cooperative

    for a in (a for a in vocabulary.ASSIGNORS if a.group_protocol == "classic"):
        protocols = assignor_protocols(a.strategy)
        assert protocols, f"{a.name}: not among the agent spec's client_assignors"
        assert ("cooperative" in protocols) == (a.rebalance_protocol == "cooperative"), a.name
    streams = "org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor"
    assert cooperative(streams)  # Kafka Streams' main consumer: cooperative, not eager
    assert assignor_protocols(streams, upgrade_from="2.3") == ("eager",)
    assert not cooperative("org.apache.kafka.clients.consumer.RangeAssignor,"
                           "org.apache.kafka.clients.consumer.CooperativeStickyAssignor")  # the Java default


def test_a_scenario_migrates_members_to_declared_kip848_assignors():
    from lens_scenarios.spec import REMOTE_ASSIGNORS

    assert {f"consumer:{name}" for name in REMOTE_ASSIGNORS} <= set(ASSIGNOR_NAMES)


def _rule_kinds() -> set[str]:
    """The kinds ``pipelines/recommend/`` writes: every config-change kind (``kinds.KINDS``: their rules
    name them from there) and the kind of each Recommendation(kind, ...) its modules build."""
    from pipelines.recommend.kinds import INSTRUMENT, KINDS

    kinds = {k.name for k in (*KINDS, INSTRUMENT)}
    for path in sorted((ROOT / "pipelines" / "recommend").glob("*.py")):
        calls = (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == "Recommendation" and n.args)
        for call in calls:
            kind = call.args[0]
            if isinstance(kind, ast.Attribute) and kind.attr == "name":
                continue  # a config-change kind's, from the registry
            if isinstance(kind, ast.IfExp):  # a plan step, or its migration
                kinds |= {kind.body.value, kind.orelse.value}
                continue
            assert isinstance(kind, ast.Constant), f"{path.name} line {call.lineno}: name the kind as a literal"
            kinds.add(kind.value)
    return kinds


def test_the_rules_write_exactly_the_declared_kinds_and_refuse_others():
    from pipelines.recommend.judgement import Recommendation

    assert _rule_kinds() == set(RECOMMENDATION_KIND_NAMES)
    with pytest.raises(ValueError, match="undeclared recommendation kind 'protocol_migration'"):
        Recommendation("protocol_migration", "t", None, (), (), (), "", "high", "why")
    with pytest.raises(ValueError, match="confidence 'certain'"):
        Recommendation("storm", "t", None, (), (), (), "", "certain", "why")


def _choices(argv: list[str], capsys) -> list[str]:
    """The choices argparse offers for the last flag of ``argv`` (given a value it refuses)."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([*argv, "not-a-declared-word"])
    assert exit_.value.code == 2
    return re.findall(r"'([^']+)'", capsys.readouterr().err.split("choose from", 1)[1])


def test_the_cli_offers_the_declared_kinds_assignors_and_protocols(capsys):
    from lens_scenarios.consumer_config import ASSIGNORS as RUN_WORDS

    verify = ["recommend", "--verify", "crash"]
    assert _choices([*verify, "--kind"], capsys) == list(VERIFIABLE_KINDS)
    assert set(VERIFIABLE_KINDS) < set(RECOMMENDATION_KIND_NAMES)
    for argv in ([*verify, "--assignor"], ["scenario", "run", "crash", "--assignor"]):
        assert _choices(argv, capsys) == list(RUN_WORDS)
    for argv in ([*verify, "--protocol"], ["scenario", "run", "crash", "--protocol"]):
        assert _choices(argv, capsys) == list(GROUP_PROTOCOLS)


def test_the_demo_names_only_the_runs_assignor_words():
    from lens_cli.demo import DEMO_MATRIX, DEMO_PLAIN
    from lens_cli.demo_findings import BASELINE, PROTOCOLS
    from lens_scenarios.consumer_config import ASSIGNORS as RUN_WORDS

    assert {a for _, a, _ in (*DEMO_MATRIX, *DEMO_PLAIN, BASELINE)} | set(PROTOCOLS) <= set(RUN_WORDS)


def test_the_protocols_are_the_contracts():
    from pipelines.simulator.assignors import RebalanceProtocol

    assert {a.group_protocol for a in vocabulary.ASSIGNORS} == set(GROUP_PROTOCOLS)
    assert {a.rebalance_protocol for a in vocabulary.ASSIGNORS} == set(REBALANCE_PROTOCOLS)
    assert set(typing.get_args(RebalanceProtocol)) == set(REBALANCE_PROTOCOLS)
    with pytest.raises(ValueError, match="outside the telemetry contract"):
        vocabulary.Assignor("kip999:sticky", "cooperative")


def test_the_simulator_models_exactly_the_declared_assignors():
    from pipelines.simulator.assignors import ASSIGNORS as MODELS

    assert tuple(MODELS) == ASSIGNOR_NAMES
    assert all(MODELS[a.name].rebalance_protocol == a.rebalance_protocol for a in vocabulary.ASSIGNORS)


@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
def test_a_scenario_runs_a_declared_assignor_by_one_word_and_reads_back_as_it(name, tmp_path):
    """Both ways: the recommendation's name -> the run's word (config_change), and the word ->
    the consumer settings a member runs with -> the name gold's readers give them."""
    from lens_scenarios.config_change import Target, apply
    from lens_scenarios.consumer_config import RUNS, member_config
    from lens_scenarios.runner import RunOptions
    from lens_scenarios.spec import load
    from pipelines.recommend.configuration import assignor_of

    assert set(RUNS.values()) <= set(ASSIGNOR_NAMES)
    target = Target(name, static=False, commit_on_revoke=False, session_timeout_ms=10_000,
                    max_poll_interval_ms=30_000)
    words = [word for word, runs in RUNS.items() if runs == name]
    if not words:  # the embedded broker's assignor is its default: a run cannot pick another
        with pytest.raises(LensError, match=f"cannot choose the '{name}' assignor"):
            apply(load("crash"), RunOptions(out_dir=tmp_path), target)
        return
    _, options = apply(load("crash"), RunOptions(out_dir=tmp_path), target)
    assert [options.assignor] == words
    config = member_config(bootstrap="b:9092", group_id="g", assignor=options.assignor, commit="batch",
                           client_id="c", group_instance_id=None, max_poll_interval_ms=30_000, telemetry_topic="t")
    member = {"group_protocol": config["group.protocol"], "assignor": config.get("partition.assignment.strategy"),
              "remote_assignor": config.get("group.remote.assignor")}
    assert assignor_of(member) == name


def test_the_closed_loop_reruns_the_declared_plan_kinds_from_the_step_before():
    from lens_scenarios.rerun import PLAN_KINDS as RERUN_PLAN_KINDS
    from pipelines.vocabulary import PLAN_KINDS, VERIFIABLE_KINDS

    assert RERUN_PLAN_KINDS == PLAN_KINDS and set(PLAN_KINDS) <= set(VERIFIABLE_KINDS)


def test_every_declared_figure_source_has_its_words_in_the_report():
    from tuning_report.wording import SOURCE_WORDS

    assert list(SOURCE_WORDS) == list(vocabulary.FIGURE_SOURCES)
