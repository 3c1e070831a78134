"""The telemetry contract: typed classes match the schema, its reference table (docs/) is current, redaction."""
from __future__ import annotations

import dataclasses
import sys
import typing

import pytest

from consumer_agent import contract as ev
from consumer_agent.member_states import ClassicState, ConsumerProtocolState
from consumer_agent.group_metadata import generation_from_metadata
from consumer_agent.inflight import InFlight
from consumer_agent.options import DEFAULT_TELEMETRY_TOPIC, merged_config, split_config
from consumer_agent.redaction import REDACTED, redacted_config
from consumer_agent.schema_docs import BEGIN, CONTRACT_DOC, END, SPEC_BEGIN, SPEC_END, render_spec, render_table
from tests.support.telemetry_log import VALIDATOR

SCHEMA = ev.schema()
DEFS = SCHEMA["$defs"]
# nested classes: (class, the schema object it mirrors)
NESTED = [
    (ev.PartitionState, DEFS["partition_state"]),
    (ev.CommitOnRevoke, DEFS["partitions_change"]["properties"]["commit_on_revoke"]),
    (ev.RebalanceTiming, DEFS["partitions_change"]["properties"]["rebalance_timing"]),
    (ev.CommittedOffset, DEFS["commit"]["properties"]["offsets"]["items"]),
    (ev.PartitionProgress, DEFS["progress"]["properties"]["partitions"]["items"]),
]


# Body fields added within v1, optional (not required): absent from older agents' events.
OPTIONAL_BODY_FIELDS = {"partitions_change": {"callback_calls", "rebalance_timing"},
                        "progress": {"cause", "next_due_ms"}}


def fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_each_body_class_has_exactly_the_schema_properties_of_its_kind():
    for kind, definition in ev.BODY_DEFINITIONS.items():
        body = DEFS[definition]
        assert set(fields(ev.KIND_BODIES[kind])) == set(body["properties"]) == \
            {*body["required"], *OPTIONAL_BODY_FIELDS.get(definition, ())}, kind
    assert set(ev.KIND_BODIES) == set(SCHEMA["properties"]["kind"]["enum"])
    for cls, spec in NESTED:
        assert set(fields(cls)) == set(spec["properties"]), cls.__name__
    assert set(fields(ev.Envelope)) == set(SCHEMA["properties"]) == {*SCHEMA["required"], "cluster_id"}


def test_optional_fields_are_nullable_in_both():
    """A field typed ``X | None`` in Python must allow null in the schema, and the reverse; or be optional in
    the schema and never null there (``OMITTED_WHEN_NONE``: None leaves it out of the event)."""
    for cls, spec in [*[(ev.KIND_BODIES[k], None) for k in ev.KIND_BODIES], *NESTED]:
        props = spec["properties"] if spec else None
        if props is None:
            kind = next(k for k, c in ev.KIND_BODIES.items() if c is cls)
            props = DEFS[ev.BODY_DEFINITIONS[kind]]["properties"]
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        for name, hint in hints.items():
            nullable_py = type(None) in typing.get_args(hint)
            schema_type = props[name].get("type")
            nullable_schema = isinstance(schema_type, list) and "null" in schema_type
            assert nullable_py == (nullable_schema or (name in ev.OMITTED_WHEN_NONE and nullable_py)), \
                f"{cls.__name__}.{name}"


def test_contract_table_is_generated_from_the_current_schema_and_agent_spec():
    document = CONTRACT_DOC.read_text()
    section = document[document.index(BEGIN) + len(BEGIN):document.index(END)].strip()
    assert section == render_table().strip(), "run: python -m consumer_agent.schema_docs --write"
    spec_section = document[document.index(SPEC_BEGIN) + len(SPEC_BEGIN):document.index(SPEC_END)].strip()
    assert spec_section == render_spec().strip(), "run: python -m consumer_agent.schema_docs --write"


def test_an_event_built_from_typed_classes_validates():
    body = ev.PartitionsChange(partitions=[ev.PartitionState("t", 0, 10, 9, 10)], incremental=True, callback_ms=0.5,
                               assignment_size=1, commit_on_revoke=ev.CommitOnRevoke(1.0, False, True, None))
    identity = {"agent_id": "a", "group_id": "g", "group_instance_id": None, "client_id": "c", "host": "h", "pid": 1,
                "group_protocol": "classic", "rebalance_protocol": "cooperative", "assignor": "cooperative-sticky"}
    event = ev.event("partitions_revoked", ev.to_dict(body), event_id="0" * 32, event_time_ms=1, seq=0,
                     member_id=None, generation=-1, identity=identity)
    assert set(event) == {f.name for f in dataclasses.fields(ev.Envelope)} - {"cluster_id"}  # the emitter adds it
    VALIDATOR.validate(event)
    event["cluster_id"] = "lkc-1"
    assert event["schema_version"] == ev.SCHEMA_VERSION == SCHEMA["properties"]["schema_version"]["const"]
    VALIDATOR.validate(event)
    event["body"]["partitions"][0]["surprise"] = 1
    assert not VALIDATOR.is_valid(event)


def test_contract_states_are_member_states_of_both_protocols():
    """The states the pipelines read meaning into exist in the agent's state tables."""
    classic, kip848 = {s.value for s in ClassicState}, {s.value for s in ConsumerProtocolState}
    assert ev.LEAVING_STATES <= classic | kip848 and ev.STALE_STATE in classic & kip848
    assert ev.OFFSET_UNKNOWN == -1001  # librdkafka's OFFSET_INVALID
    assert list(ev.KINDS) == SCHEMA["properties"]["kind"]["enum"]


@pytest.mark.parametrize("key", ["sasl.password", "ssl.key.location", "ssl.key.password",
                                 "sasl.oauthbearer.client.secret", "sasl.oauthbearer.token.endpoint.url",
                                 "sasl.jaas.config", "ssl.keystore.password", "sasl.oauthbearer.client.credentials",
                                 "Some.API.Key"])
def test_secrets_are_redacted(key):
    snapshot = redacted_config({key: "s3cr3t", "bootstrap.servers": "b:9092", "on_commit": print})
    assert snapshot[key] == REDACTED
    assert snapshot["bootstrap.servers"] == "b:9092"
    assert "s3cr3t" not in repr(snapshot)


def test_agent_options_are_split_validated_and_inherit_the_cluster_settings():
    options, consumer = split_config({
        "bootstrap.servers": "b:9092", "group.id": "g", "security.protocol": "SASL_SSL", "sasl.password": "p",
        "lens.telemetry.topic": DEFAULT_TELEMETRY_TOPIC, "lens.telemetry.bootstrap.servers": "other:9092",
        "lens.commit.on.revoke": "true", "lens.processing": "explicit"})
    assert not any(k.startswith("lens.") for k in consumer)
    assert options.producer_config == {"bootstrap.servers": "other:9092", "security.protocol": "SASL_SSL",
                                       "sasl.password": "p"}
    assert options.commit_on_revoke is True and options.processing == "explicit"
    with pytest.raises(ValueError, match="lens.telemetry.topic"):
        split_config({"bootstrap.servers": "b", "group.id": "g"})
    with pytest.raises(ValueError, match="lens.comit.on.revoke"):
        split_config({"bootstrap.servers": "b", "lens.telemetry.topic": "t", "lens.comit.on.revoke": True})
    with pytest.raises(ValueError, match="lens.processing"):
        split_config({"bootstrap.servers": "b", "lens.telemetry.topic": "t", "lens.processing": "later"})
    with pytest.raises(ValueError, match="lens.buffer.max.events"):
        split_config({"bootstrap.servers": "b", "lens.telemetry.topic": "t", "lens.buffer.max.events": 0})


def test_the_config_is_read_as_the_client_reads_it_and_no_cluster_means_telemetry_off():
    """Consumer(conf, **kwargs): the keywords win; arguments the client refuses are left to it
    (None). No cluster address anywhere: accepted, telemetry off; librdkafka's other name for the
    address counts, and a telemetry cluster of its own replaces the consumer's under either name."""
    assert merged_config(({"a": 1, "b": 2},), {"b": 3}) == {"a": 1, "b": 3}
    assert merged_config((), {"group.id": "g"}) == {"group.id": "g"}
    assert merged_config((None,), {}) is None and merged_config(({}, {}), {}) is None
    options, consumer = split_config({"group.id": "g", "lens.telemetry.topic": "t", 1: 2})
    assert options.producer_config is None and consumer == {"group.id": "g", 1: 2}
    options, _ = split_config({"metadata.broker.list": "b:9092", "lens.telemetry.topic": "t"})
    assert options.producer_config == {"metadata.broker.list": "b:9092"}
    options, _ = split_config({"metadata.broker.list": "b:9092", "lens.telemetry.topic": "t",
                               "lens.telemetry.bootstrap.servers": "other:9092"})
    assert options.producer_config == {"bootstrap.servers": "other:9092"}
    options, _ = split_config({"group.id": "g", "lens.telemetry.topic": "t",
                               "lens.telemetry.bootstrap.servers": "other:9092"})
    assert options.producer_config == {"bootstrap.servers": "other:9092"}


def test_generation_is_parsed_from_group_metadata_defensively():
    blob = b"CGMDv2:" + (42).to_bytes(4, sys.byteorder, signed=True) + b"g\x00m\x00\x00"
    assert generation_from_metadata(blob) == 42
    assert generation_from_metadata(b"CGMDv2:\xff\xff\xff\xffx\x00\x00\x01") == -1
    assert generation_from_metadata(b"CGMDv3:....") == -1
    assert generation_from_metadata(b"CGMDv2:\x01") == -1
    assert generation_from_metadata(None) == -1


def test_in_flight_commit_point_is_the_lowest_unfinished_offset():
    inflight, key = InFlight(), ("t", 0)
    for offset in (5, 6, 7):
        inflight.handed_out(key, offset)
    inflight.mark(key, 7)  # out of order: 5 and 6 still running
    assert inflight.commit_offset(key) == 5 and inflight.last_processed(key) == 4
    assert inflight.wait_drained([key], 0.05) is False
    inflight.mark(key, 5)
    inflight.mark(key, 6)
    assert inflight.commit_offset(key) == 8 and inflight.wait_drained([key], 0.05) is True
    inflight.forget([key])
    inflight.mark(key, 9)  # not handed out (or already revoked): ignored
    assert inflight.commit_offset(key) is None


def test_a_field_the_agent_does_not_know_is_left_out_where_the_schema_has_no_null():
    """``handed_out`` at an assignment, a progress tick's ``cause`` from a caller that gives none: absent, and
    the event validates; given, they are sent."""
    state = ev.PartitionState("t", 0, 10, 9, 10)
    assert "handed_out" not in ev.to_dict(state) and ev.to_dict(
        ev.PartitionState("t", 0, 10, 9, 10, handed_out=False))["handed_out"] is False
    tick = ev.to_dict(ev.Progress(interval_ms=5.0, partitions=[], truncated=0))
    assert "cause" not in tick and "next_due_ms" not in tick
    assert ev.to_dict(ev.Progress(5.0, [], 0, cause="first_record", next_due_ms=1000.0))["cause"] == "first_record"
    identity = {"agent_id": "a", "group_id": "g", "group_instance_id": None, "client_id": "c", "host": "h", "pid": 1,
                "group_protocol": "classic", "rebalance_protocol": "eager", "assignor": "range"}
    for kind, body in (("partitions_assigned", ev.PartitionsChange([state], False, 0.1, 1, None)),
                       ("progress", ev.Progress(5.0, [], 0))):
        VALIDATOR.validate(ev.event(kind, ev.to_dict(body), event_id="0" * 32, event_time_ms=1, seq=0,
                                    member_id=None, generation=-1, identity=identity))
