"""Kafka's own serde, run as a child JVM: the oracle the broker source's decoder is checked against.

``tests/broker_log/RecordOracle.java`` is compiled once per jar set (into a temporary
folder) against ``kafka-group-coordinator``'s ``GroupCoordinatorRecordSerde`` and
``CoordinatorRecordJsonConverters``; ``decode`` gives Kafka's reading of records as JSON,
``encode`` has Kafka write records from JSON. One JVM per call, records batched through stdin.
"""
from __future__ import annotations

import base64
import copy
import json
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.broker_log.records import CoordinatorRecord
from pipelines.broker_log.schema import Field, MessageSchema, default_value
from pipelines.broker_log.schema_set import SchemaSet

SOURCE = Path(__file__).resolve().parents[1] / "broker_log" / "RecordOracle.java"  # beside its tests


@dataclass(frozen=True)
class KafkaSerde:
    classpath: str  # the kafka jar set's jars and the compiled oracle

    @classmethod
    def compile(cls, jars: Iterable[Path], out: Path) -> "KafkaSerde":
        jar_path = ":".join(str(j) for j in jars)
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", jar_path, str(SOURCE)], check=True,
                       capture_output=True, text=True)
        return cls(f"{out}:{jar_path}")

    def _run(self, mode: str, lines: list[str]) -> list[str]:
        done = subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", self.classpath, "RecordOracle",
                               mode], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True,
                              timeout=300)
        out = done.stdout.splitlines()
        assert len(out) == len(lines), done.stderr
        return out

    def decode(self, records: list[tuple[bytes, bytes | None]]) -> list[dict[str, Any]]:
        """Kafka's reading of each (key, value): its JSON (type, key, version, value), or {"error": ...}."""
        lines = [f"{k.hex()} {'-' if v is None else v.hex()}" for k, v in records]
        return [json.loads(line) for line in self._run("decode", lines)]

    def encode(self, specs: list[dict[str, Any]]) -> list[tuple[bytes, bytes | None] | str]:
        """Kafka's bytes for each {"type", "version", "key", "value"} spec, or its error."""
        out = []
        for line in self._run("encode", [json.dumps(s) for s in specs]):
            if line.startswith("{"):
                out.append(json.loads(line)["error"])
                continue
            key, value = line.split(" ")
            out.append((bytes.fromhex(key), None if value == "-" else bytes.fromhex(value)))
        return out


def as_json(value: Any) -> Any:
    """Our decoded value in the oracle's JSON terms: bytes as base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value


def differences(ours: Any, kafka: Any, schema: MessageSchema, fields: tuple[Field, ...] | None = None,
                path: str = "") -> list[str]:
    """Field by field over ``schema``: a field in Kafka's JSON must equal ours; one Kafka left out
    (absent in this version, or tagged and at its default) must hold our default."""
    fields = schema.fields if fields is None else fields
    if kafka is None or ours is None:
        return [] if kafka is None and ours is None else [f"{path}: Kafka {kafka!r}, ours {ours!r}"]
    found = [f"{path}.{name}: only in Kafka's reading" for name in kafka.keys() - {f.name for f in fields}]
    for field in fields:
        where = f"{path}.{field.name}"
        if field.name not in ours:
            found.append(f"{where}: missing from ours")
        elif field.name not in kafka:
            if as_json(ours[field.name]) != as_json(default_value(field, schema.structs)):
                found.append(f"{where}: Kafka left it out, ours {ours[field.name]!r} is not its default")
        elif field.element in schema.structs:
            found += _struct_differences(ours[field.name], kafka[field.name], schema, field, where)
        elif as_json(ours[field.name]) != kafka[field.name]:
            found.append(f"{where}: Kafka {kafka[field.name]!r}, ours {as_json(ours[field.name])!r}")
    return found


def _struct_differences(ours: Any, kafka: Any, schema: MessageSchema, field: Field, where: str) -> list[str]:
    inner = schema.structs[field.element]
    if not field.is_array or ours is None or kafka is None:
        return differences(ours, kafka, schema, inner, where) if not field.is_array else (
            [] if ours is kafka is None else [f"{where}: Kafka {kafka!r}, ours {ours!r}"])
    if len(ours) != len(kafka):
        return [f"{where}: Kafka has {len(kafka)} elements, ours {len(ours)}"]
    return [d for i, (o, k) in enumerate(zip(ours, kafka)) for d in differences(o, k, schema, inner, f"{where}[{i}]")]


def record_differences(schemas: SchemaSet, ours: CoordinatorRecord, theirs: dict[str, Any]) -> list[str]:
    """Our reading of one record against Kafka's (``KafkaSerde.decode``), field by field: key, value
    and, for a classic consumer group, each member's decoded subscription and assignment (the
    oracle's addition to Kafka's JSON, compared against the consumer protocol's schemas)."""
    theirs = copy.deepcopy(theirs)
    types = schemas.records[theirs["type"]]
    where = f"{types.name} v{theirs['version']}"
    found = [f"{where} value{d}" for d in _member_protocol_differences(schemas, ours, theirs)]
    found += [f"{where} key{d}" for d in differences(ours.key, theirs["key"], types.key)]
    return found + [f"{where} value{d}" for d in differences(ours.value, theirs["value"], types.value)]


def _member_protocol_differences(schemas: SchemaSet, ours: CoordinatorRecord, theirs: dict[str, Any]) -> list[str]:
    if ours.name != "GroupMetadata" or ours.value is None:
        return []
    found = []
    for i, (mine, kafka) in enumerate(zip(ours.value["members"], theirs["value"]["members"])):
        for field, message in (("subscription", "ConsumerProtocolSubscription"),
                               ("assignment", "ConsumerProtocolAssignment")):
            decoded = mine[f"{field}_decoded"]
            body = None if decoded is None else {k: v for k, v in decoded.items() if k != "version"}
            found += differences(body, kafka.pop(f"{field}_decoded", None), schemas.consumer_protocol[message],
                                 path=f".members[{i}].{field}_decoded")
    return found
