"""The agent spec (consumer_agent/agent-spec-v1.json) is whole, and the Python agent follows it.

The Java agent's JUnit tests (jvm_agent/src/test/java) hold it to the same file; the conformance
test (test_conformance.py) plays both agents against each other on the broker.
"""
from __future__ import annotations

import dataclasses
import sys

import pytest

from consumer_agent import contract, options, redaction
from consumer_agent.agent import Agent
from consumer_agent.agent_spec import CONTRACT_VERSION, PROTOCOLS, constant, spec
from consumer_agent.lifecycle import LIFECYCLES, REASONS, Lifecycle
from consumer_agent.member_states import STATE_ENUMS, TABLES, is_allowed

SPEC = spec()


def test_the_spec_is_part_of_the_versioned_contract():
    assert CONTRACT_VERSION == contract.SCHEMA_VERSION
    assert contract.OFFSET_UNKNOWN == constant("offset_unknown") == -1001  # librdkafka's OFFSET_INVALID


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_state_the_spec_names_is_a_state_of_its_protocol(protocol):
    states = set(SPEC["member_states"][protocol]["states"])
    assert {s.value for s in STATE_ENUMS[protocol]} == states
    for entry in SPEC["member_states"][protocol]["states"].values():
        assert set(entry["entered_from"]) <= states
    lifecycle = SPEC["lifecycle"]
    for name, path in lifecycle["paths"].items():
        assert path[protocol] and set(path[protocol]) <= states, name
    assert set(lifecycle["rejoin_from"][protocol]) <= states
    assert contract.STALE_STATE in states and contract.JOINING_STATE in states
    assert contract.LEAVING_STATES & states


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_lifecycle_path_walks_allowed_transitions(protocol):
    """Along a path the member only takes transitions its own table allows."""
    for name, path in SPEC["lifecycle"]["paths"].items():
        steps = path[protocol]
        assert all(is_allowed(protocol, a, b) for a, b in zip(steps, steps[1:])), (name, steps)
    assert is_allowed(protocol, "stable", "fatal") and not is_allowed(protocol, "fatal", "nonsense")
    assert len(TABLES[protocol]) == len(SPEC["member_states"][protocol]["states"])


def test_the_python_tables_read_the_spec():
    lifecycle = SPEC["lifecycle"]
    assert {f.name for f in dataclasses.fields(Lifecycle)} == {*lifecycle["paths"], "rejoin_from"}
    for protocol, walk in LIFECYCLES.items():
        assert walk.left[-1] == "unsubscribed" and walk.stale == tuple(lifecycle["paths"]["stale"][protocol])
    assert contract.LEAVE_REASONS == {REASONS[r] for r in lifecycle["leave_reasons"]}


def test_the_options_dataclass_has_a_field_per_spec_key_with_its_default():
    keys = SPEC["options"]["keys"]
    fields = {f.name: f for f in dataclasses.fields(options.AgentOptions)}
    assert {options.field_name(k) for k in keys} | {"producer_config", "cluster_config"} == set(fields)
    defaults = options.AgentOptions(telemetry_topic="t")
    for key, entry in keys.items():
        if entry.get("required"):
            continue
        assert getattr(defaults, options.field_name(key)) == entry["default"] == options.parse_option(key,
                                                                                                   entry["default"])
    assert options.DEFAULT_TELEMETRY_TOPIC == constant("default_telemetry_topic")


EXAMPLES = SPEC["secrets"]["examples"]


@pytest.mark.parametrize("key", EXAMPLES["secret_keys"])
def test_every_secret_key_of_the_spec_is_redacted(key):
    snapshot = redaction.redacted_config({key: "s3cr3t", "bootstrap.servers": "b:9092"})
    assert snapshot == {key: redaction.REDACTED, "bootstrap.servers": "b:9092"}


def test_other_keys_are_kept_and_urls_lose_their_userinfo():
    assert not [k for k in EXAMPLES["kept_keys"] if redaction.is_secret(k)]
    for case in EXAMPLES["values"]:
        assert redaction.redacted_config({"schema.registry.url": case["value"]}) == \
            {"schema.registry.url": case["shown"]}


class _Refusing:
    """A consumer view whose client answers once (generation 7, member m-1), then refuses, as after close()."""

    def __init__(self, answers: int) -> None:
        self.answers = answers

    def consumer_group_metadata(self) -> bytes:
        if not self.answers:
            raise RuntimeError("Consumer closed")
        self.answers -= 1
        return b"CGMDv2:" + (7).to_bytes(4, sys.byteorder, signed=True) + b"g\x00m-1\x00"

    def memberid(self) -> str:
        return "m-1"


@pytest.mark.parametrize("answers, expected", [(1, (7, "m-1")), (0, (constant("generation_unknown"), None))])
def test_where_the_client_cannot_answer_the_last_generation_stands_in(answers, expected):
    """The spec's envelope rule: the last values the client gave, generation_unknown and no member before any."""
    assert SPEC["envelope"]["generation_when_unreadable"] == "last_seen"
    agent = Agent(options.AgentOptions(telemetry_topic="t", producer_config=None), {"group.id": "g"})
    agent._consumer = _Refusing(answers)
    assert agent._membership() == expected
    assert agent._membership() == expected  # refused now: the last values (or none) stand in
