"""The builders and the derived Spark schema cannot drift from the telemetry contract."""
from __future__ import annotations

import json

import jsonschema

from consumer_agent import contract
from pipelines import catalog, telemetry_types as ts
from lens_scenarios.synthetic import fleet_telemetry, long_lived_telemetry
from tests.support.fleets import every_cause, scale_out_then_crash


def test_builder_output_is_valid_v1():
    validator = jsonschema.Draft202012Validator(contract.schema())
    values = [v for _, v, _ in scale_out_then_crash().keyed()]
    values += [v for fleet in every_cause().values() for _, v, _ in fleet.keyed()]
    values += [v for _, v, _ in fleet_telemetry(groups=1, members=3, partitions=4, rounds=2)]
    for value in values:
        validator.validate(json.loads(value))
    assert len(values) > 100



def test_eager_long_lived_rounds_move_every_partition():
    """The benchmark's eager shape is valid v1, and each hour every partition is revoked and
    assigned to a member other than the one that revoked it."""
    validator = jsonschema.Draft202012Validator(contract.schema())
    events = [json.loads(v) for _, v, _ in long_lived_telemetry(groups=1, members=4, partitions=8, hours=2,
                                                                 tick_s=300, eager_every_min=20)]
    for event in events:
        validator.validate(event)
    assert {e["rebalance_protocol"] for e in events} == {"eager"}
    last_revoker: dict[int, str] = {}
    moved: dict[int, int] = {}
    for e in events:
        parts = [p["partition"] for p in e["body"].get("partitions", [])]
        if e["kind"] == "partitions_revoked":
            last_revoker.update(dict.fromkeys(parts, e["agent_id"]))
        elif e["kind"] == "partitions_assigned":
            for p in parts:
                moved[p] = moved.get(p, 0) + (last_revoker.get(p) not in (None, e["agent_id"]))
    assert set(moved) == set(range(8)) and min(moved.values()) >= 5  # rounds at 0:20, 0:40, 1:00, 1:20, 1:40

def test_spark_schema_follows_contract():
    envelope = ts.envelope_schema()
    assert set(envelope.fieldNames()) == set(contract.schema()["properties"]) | {ts.CORRUPT_COLUMN}
    assert contract.BODY_DEFINITIONS["partitions_revoked"] == "partitions_change"
    progress = ts.body_schema("progress")["partitions"].dataType.elementType
    assert {"processed", "lag", "last_processed_offset"} <= set(progress.fieldNames())
    assert "member_id" not in ts.required_envelope_fields()


def test_events_table_follows_contract():
    """silver/events holds the envelope, one struct per body definition, then provenance."""
    names = catalog.EVENTS.column_names()
    assert names[:len(contract.schema()["properties"])] == list(contract.schema()["properties"])
    assert set(ts.definitions()) == set(contract.BODY_DEFINITIONS.values()) <= set(names)
    assert dict(catalog.EVENTS.all_columns())["body"] == "string"  # kept as the JSON text gold parses
