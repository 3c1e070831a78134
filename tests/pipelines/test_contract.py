"""The builders and the derived Spark schema cannot drift from the telemetry contract."""
from __future__ import annotations

import json

import jsonschema

from pipelines import telemetry_schema as ts
from pipelines.synthetic import fleet_telemetry
from tests.pipelines.scenarios import every_cause, scale_out_then_crash


def test_builder_output_is_valid_v1():
    validator = jsonschema.Draft202012Validator(ts.contract())
    values = [v for _, v, _ in scale_out_then_crash().keyed()]
    values += [v for fleet in every_cause().values() for _, v, _ in fleet.keyed()]
    values += [v for _, v, _ in fleet_telemetry(groups=1, members=3, partitions=4, rounds=2)]
    for value in values:
        validator.validate(json.loads(value))
    assert len(values) > 100


def test_spark_schema_follows_contract():
    envelope = ts.envelope_schema()
    assert set(envelope.fieldNames()) == set(ts.contract()["properties"]) | {ts.CORRUPT_COLUMN}
    assert ts.body_definitions()["partitions_revoked"] == "partitions_change"
    progress = ts.body_schema("progress")["partitions"].dataType.elementType
    assert {"processed", "lag", "last_processed_offset"} <= set(progress.fieldNames())
    assert "member_id" not in ts.required_envelope_fields()
