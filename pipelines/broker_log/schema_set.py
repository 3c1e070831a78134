"""The schemas of one Kafka version, read from its own jars at run time.

``kafka-group-coordinator-<v>.jar`` carries the coordinator records' schemas
(``common/message/*Key.json`` and ``*Value.json``, paired by ``apiKey``), ``kafka-clients-<v>.jar``
the consumer protocol's (``ConsumerProtocolSubscription``/``Assignment``). Nothing is copied into
this repository: the pinned jars (``lens_runtime/jvm/pom.xml``) decide what the decoder reads,
and a newer broker's jars (``lens_runtime.jvm_deps.ensure_kafka_jars``) give its newer schemas.
"""
from __future__ import annotations

import functools
import zipfile
from dataclasses import dataclass
from pathlib import Path

from pipelines.broker_log.schema import MessageSchema, parse_schema

MESSAGES = "common/message/"
CONSUMER_PROTOCOL = ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment")


@dataclass(frozen=True)
class RecordSchemas:
    """One record type: the key's schema and the value's."""

    record_type: int
    name: str  # the key schema's name without "Key": "OffsetCommit", "GroupMetadata", ...
    key: MessageSchema
    value: MessageSchema


@dataclass(frozen=True)
class SchemaSet:
    """Every record type of one Kafka version, and its consumer protocol's messages."""

    kafka_version: str
    records: dict[int, RecordSchemas]
    consumer_protocol: dict[str, MessageSchema]  # ConsumerProtocolSubscription/Assignment by name


def schemas_from_jars(kafka_version: str, group_coordinator_jar: Path, clients_jar: Path) -> SchemaSet:
    keys: dict[int, MessageSchema] = {}
    values: dict[int, MessageSchema] = {}
    for schema in _jar_schemas(group_coordinator_jar, lambda n: n.endswith(("Key.json", "Value.json"))):
        side = keys if schema.kind == "coordinator-key" else values if schema.kind == "coordinator-value" else None
        if side is not None and schema.api_key is not None:
            side[schema.api_key] = schema
    records = {t: RecordSchemas(t, keys[t].name.removesuffix("Key"), keys[t], values[t])
               for t in sorted(keys.keys() & values.keys())}
    protocol = {s.name: s for s in _jar_schemas(clients_jar, lambda n: n[:-5] in CONSUMER_PROTOCOL)}
    missing = [n for n in CONSUMER_PROTOCOL if n not in protocol]
    if not records or missing:
        raise ValueError(f"Kafka {kafka_version}'s jars lack the schemas the broker source reads "
                         f"({group_coordinator_jar.name}: {len(records)} record types; {clients_jar.name}: "
                         f"missing {', '.join(missing) or 'nothing'})")
    return SchemaSet(kafka_version, records, protocol)


def _jar_schemas(jar: Path, wanted) -> list[MessageSchema]:
    with zipfile.ZipFile(jar) as archive:
        names = [n for n in archive.namelist() if n.startswith(MESSAGES) and n.endswith(".json")
                 and "/" not in n[len(MESSAGES):] and wanted(n[len(MESSAGES):])]
        return [parse_schema(archive.read(n).decode("utf-8")) for n in sorted(names)]


def schema_set(kafka_version: str | None = None) -> SchemaSet:
    """The schemas of ``kafka_version`` (default: the pinned one), from the jars the set-up fetched
    (a version other than the pinned one: ``ensure_kafka_jars(version)`` first). Read once per process."""
    from lens_runtime.jvm_deps import pinned_versions

    return _schema_set(kafka_version or pinned_versions().kafka)


@functools.lru_cache(maxsize=4)
def _schema_set(version: str) -> SchemaSet:
    from lens_runtime.jvm_deps import kafka_jars_of

    jars = {j.name: j for j in kafka_jars_of(version)}
    wanted = (f"kafka-group-coordinator-{version}.jar", f"kafka-clients-{version}.jar")
    missing = [name for name in wanted if name not in jars]
    if missing:
        raise ValueError(f"Kafka {version}'s jar set lacks {', '.join(missing)}: "
                         "the broker source reads its schemas there")
    return schemas_from_jars(version, jars[wanted[0]], jars[wanted[1]])
