"""Records of every type at every valid version, made from the schemas with values that are not
the defaults (so tagged fields are written), for Kafka's serializer to encode (``tests.support.kafka_serde``)."""
from __future__ import annotations

import base64
from typing import Any

from pipelines.broker_log.schema import Field, MessageSchema
from pipelines.broker_log.schema_set import SchemaSet

_INTS = {"int8": 7, "int16": 300, "uint16": 65000, "int32": 123456, "uint32": 4_000_000_000,
         "int64": 1_700_000_000_123}
UUID = "kaVbBCAuTvqPFFlgY1B6Pw"


def sample(schema: MessageSchema, version: int, nulls: bool) -> dict[str, Any]:
    """A JSON value of ``schema`` at ``version``; ``nulls``: nullable fields null, arrays empty."""
    return _struct(schema, schema.fields, version, nulls)


def _struct(schema: MessageSchema, fields: tuple[Field, ...], version: int, nulls: bool) -> dict[str, Any]:
    return {f.name: _field(schema, f, version, nulls) for f in fields if version in f.versions}


def _field(schema: MessageSchema, field: Field, version: int, nulls: bool) -> Any:
    if nulls and version in field.nullable:
        return None
    if field.is_array:
        return [] if nulls else [_scalar(schema, field, version, nulls, i) for i in range(2)]
    return _scalar(schema, field, version, nulls, 0)


def _scalar(schema: MessageSchema, field: Field, version: int, nulls: bool, index: int) -> Any:
    kind = field.element
    if kind in _INTS:
        return _INTS[kind] - index
    if kind == "bool":
        return True
    if kind == "float64":
        return 1.5
    if kind == "string":
        return f"{field.name}-{index}-é"
    if kind in ("bytes", "records"):
        return base64.b64encode(f"\x00{field.name}{index}".encode()).decode()
    if kind == "uuid":
        return UUID
    return _struct(schema, schema.structs[kind], version, nulls)


def every_record(schemas: SchemaSet) -> list[dict[str, Any]]:
    """One spec per record type, value version and variant (values set, nulls), plus a tombstone per type."""
    specs = []
    for record_type, types in schemas.records.items():
        key = sample(types.key, 0, nulls=False)
        high = types.value.valid.high if types.value.valid.high is not None else types.value.valid.low
        for version in range(types.value.valid.low, high + 1):
            for nulls in (False, True):
                specs.append({"type": record_type, "version": version, "key": key,
                              "value": sample(types.value, version, nulls)})
        specs.append({"type": record_type, "version": None, "key": key, "value": None})
    return specs
