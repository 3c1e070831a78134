"""Kafka's message JSON schemas as plain data: versions, fields, structs, tags and defaults.

Kafka generates its readers from the ``common/message/*.json`` files (the ``generator`` module);
this is the part of that generator a reader needs, read at run time instead of generated, so a
new jar brings its own schemas and nothing is copied by hand. The files are JSON with ``//``
line comments (Kafka's parser allows them). Field names are camelCase, as Kafka's JSON converters
and ``kafka-dump-log --offsets-decoder`` print them (``MemberEpoch`` -> ``memberEpoch``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

PRIMITIVES = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
                        "string", "bytes", "records", "uuid"})
_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID's string form


@dataclass(frozen=True)
class Versions:
    """A version range as the schemas write it: "0+", "1-3", "3" or "none"."""

    low: int
    high: int | None  # None: open-ended

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        text = (text or "none").strip()
        if text == "none":
            return cls(1, 0)  # empty
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: int) -> bool:
        return self.low <= version and (self.high is None or version <= self.high)


@dataclass(frozen=True)
class Field:
    name: str  # camelCase
    type: str  # a primitive, a struct name, or "[]" + either
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: Any  # as the schema writes it (None: the type's own default)
    null_default: bool  # the schema's default is "null" (a JSON null means no default, as in Kafka)
    fields: tuple["Field", ...] | None  # an inline struct's fields

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type


@dataclass(frozen=True)
class MessageSchema:
    """One message: a coordinator key or value, or a data message (the consumer protocol's)."""

    name: str
    kind: str  # coordinator-key, coordinator-value or data
    api_key: int | None
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...]
    structs: dict[str, tuple[Field, ...]]  # struct name -> fields: common and inline structs alike


def parse_schema(text: str) -> MessageSchema:
    """One schema file's text -> its MessageSchema."""
    doc = json.loads(_COMMENT.sub("", text))
    structs: dict[str, tuple[Field, ...]] = {}
    for common in doc.get("commonStructs", []):
        structs[common["name"]] = _fields(common["fields"], structs)
    fields = _fields(doc.get("fields", []), structs)
    return MessageSchema(name=doc["name"], kind=doc["type"], api_key=doc.get("apiKey"),
                         valid=Versions.parse(doc["validVersions"]),
                         flexible=Versions.parse(doc.get("flexibleVersions")),
                         fields=fields, structs=structs)


def _fields(specs: list[dict[str, Any]], structs: dict[str, tuple[Field, ...]]) -> tuple[Field, ...]:
    out = []
    for spec in specs:
        inline = _fields(spec["fields"], structs) if "fields" in spec else None
        field = Field(name=camel_case(spec["name"]), type=spec["type"], versions=Versions.parse(spec.get("versions")),
                      nullable=Versions.parse(spec.get("nullableVersions")),
                      tagged=Versions.parse(spec.get("taggedVersions")), tag=spec.get("tag"),
                      default=spec.get("default"), null_default=spec.get("default") == "null",
                      fields=inline)
        if inline is not None:
            structs[field.element] = inline
        out.append(field)
    return tuple(out)


def camel_case(name: str) -> str:
    """Kafka's ``FieldSpec.camelCaseName``: the first letter lower-cased."""
    return name[:1].lower() + name[1:]


def default_value(field: Field, structs: dict[str, tuple[Field, ...]]) -> Any:
    """What Kafka's generated class holds for a field the bytes did not carry: absent in this
    version, or tagged and left out because it had its default."""
    if field.null_default:
        return None
    if field.is_array:
        return []
    kind, declared = field.type, field.default
    if kind == "bool":
        return declared in (True, "true")
    if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(declared, 0) if isinstance(declared, str) else int(declared or 0)
    if kind == "float64":
        return float(declared or 0)
    if kind == "string":
        return declared or ""
    if kind in ("bytes", "records"):
        return b""
    if kind == "uuid":
        return ZERO_UUID
    return {f.name: default_value(f, structs) for f in structs[kind]}
