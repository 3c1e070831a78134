"""Spark schemas derived from the telemetry contract (consumer_agent/telemetry-v1.schema.json).

Derived, never hand-copied, so the pipelines cannot drift from the contract. The
envelope is parsed with ``body`` kept as raw JSON text, because the same body field
name has different types across kinds (``commit_on_revoke`` is a boolean in
``member_config`` and an object in a revoke). Each body definition then gets its own
struct, parsed only for the kinds that reference it.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from pyspark.sql import types as T

CORRUPT_COLUMN = "_corrupt_record"


@lru_cache(maxsize=1)
def contract() -> dict[str, Any]:
    """The JSON Schema of telemetry v1, as shipped with consumer_agent."""
    return json.loads(resources.files("consumer_agent").joinpath("telemetry-v1.schema.json").read_text())


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref:
        return contract()["$defs"][ref.rsplit("/", 1)[-1]]
    return node


def _types(node: dict[str, Any]) -> list[str]:
    declared = node.get("type")
    if declared is None:
        if "const" in node:
            return ["integer" if isinstance(node["const"], int) else "string"]
        if "enum" in node:
            return ["string"]
        return ["object"]
    return [declared] if isinstance(declared, str) else list(declared)


def spark_type(node: dict[str, Any]) -> T.DataType:
    """The Spark type for one JSON Schema node (nullability is left to the validation)."""
    node = _resolve(node)
    kinds = [t for t in _types(node) if t != "null"]
    kind = kinds[0]
    if kind == "integer":
        return T.LongType()
    if kind == "number":
        return T.DoubleType()
    if kind == "boolean":
        return T.BooleanType()
    if kind == "string":
        return T.StringType()
    if kind == "array":
        return T.ArrayType(spark_type(node["items"]))
    if "properties" in node:
        return T.StructType([T.StructField(name, spark_type(sub)) for name, sub in node["properties"].items()])
    return T.MapType(T.StringType(), T.StringType())


def nullable_fields(node: dict[str, Any]) -> set[str]:
    """Fields of an object node that the contract allows to be null."""
    node = _resolve(node)
    return {name for name, sub in node.get("properties", {}).items() if "null" in _types(_resolve(sub))}


def envelope_schema() -> T.StructType:
    """The envelope with ``body`` as raw JSON text and a column catching unparsable values."""
    props = contract()["properties"]
    fields = [T.StructField(name, T.StringType() if name == "body" else spark_type(sub))
              for name, sub in props.items()]
    return T.StructType([*fields, T.StructField(CORRUPT_COLUMN, T.StringType())])


def required_envelope_fields() -> list[str]:
    """Envelope fields that must be present and not null."""
    schema = contract()
    return [f for f in schema["required"] if f not in nullable_fields(schema)]


def kinds() -> list[str]:
    return list(contract()["properties"]["kind"]["enum"])


@lru_cache(maxsize=1)
def body_definitions() -> dict[str, str]:
    """kind -> name of the $defs entry its body follows (from the contract's if/then rules)."""
    mapping = {}
    for rule in contract()["allOf"]:
        kind = rule["if"]["properties"]["kind"]["const"]
        mapping[kind] = rule["then"]["properties"]["body"]["$ref"].rsplit("/", 1)[-1]
    return mapping


def body_schema(definition: str) -> T.StructType:
    return spark_type(contract()["$defs"][definition])


def required_body_fields(definition: str) -> list[str]:
    node = contract()["$defs"][definition]
    return [f for f in node.get("required", []) if f not in nullable_fields(node)]


def schema_version() -> int:
    return int(contract()["properties"]["schema_version"]["const"])
