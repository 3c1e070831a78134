"""Spark types derived from the telemetry contract (``consumer_agent.contract``).

Derived, never hand-copied, so the pipelines cannot drift from the contract. The
envelope is parsed with ``body`` kept as raw JSON text, because the same body field
name has different types across kinds (``commit_on_revoke`` is a boolean in
``member_config`` and an object in a revoke). Each body definition then gets its own
struct, parsed only for the kinds that reference it.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import types as T

from consumer_agent.contract import BODY_DEFINITIONS, schema as contract

CORRUPT_COLUMN = "_corrupt_record"
# An event of a later schema version keeps its whole JSON text here (the fields this pipeline
# does not know are in it); null for events of this version. See pipelines.validate.parse.
LATER_VERSION_COLUMN = "later_version_json"
# Where each event came from, and validation's marks (see pipelines.validate).
PROVENANCE = (("topic", "string"), ("kafka_partition", "int"), ("kafka_offset", "bigint"),
              ("kafka_timestamp", "timestamp"), ("event_date", "date"), ("validate_batch", "bigint"),
              ("suspected_by", "string"))


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


def envelope_enums() -> dict[str, list[str]]:
    """Envelope fields the contract limits to a list of values, with the values."""
    return {name: list(node["enum"]) for name, node in contract()["properties"].items() if "enum" in node}


def definitions() -> list[str]:
    """The body definitions, each a struct column of the events table."""
    return sorted(set(BODY_DEFINITIONS.values()))


def body_schema(definition: str) -> T.StructType:
    return spark_type(contract()["$defs"][definition])


def required_body_fields(definition: str) -> list[str]:
    node = contract()["$defs"][definition]
    return [f for f in node.get("required", []) if f not in nullable_fields(node)]


def event_columns() -> tuple[tuple[str, str], ...]:
    """The columns of the events table: the envelope (``body`` as its JSON text), a typed
    struct per body definition, the corrupt-record text, a later version's JSON text and the
    provenance."""
    envelope = [(f.name, f.dataType.simpleString()) for f in envelope_schema().fields if f.name != CORRUPT_COLUMN]
    bodies = [(d, body_schema(d).simpleString()) for d in definitions()]
    return (*envelope, *bodies, (CORRUPT_COLUMN, "string"), (LATER_VERSION_COLUMN, "string"), *PROVENANCE)
