"""The builders and the derived Spark schema cannot drift from the telemetry contract."""
from __future__ import annotations

import json

import jsonschema

from consumer_agent import contract
from pipelines import catalog, telemetry_types as ts
from lens_scenarios.synthetic import fleet_telemetry
from tests.support.fleets import every_cause, scale_out_then_crash


def test_builder_output_is_valid_v1():
    validator = jsonschema.Draft202012Validator(contract.schema())
    values = [v for _, v, _ in scale_out_then_crash().keyed()]
    values += [v for fleet in every_cause().values() for _, v, _ in fleet.keyed()]
    values += [v for _, v, _ in fleet_telemetry(groups=1, members=3, partitions=4, rounds=2)]
    for value in values:
        validator.validate(json.loads(value))
    assert len(values) > 100


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
