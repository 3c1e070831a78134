"""Kafka's own serde compiled once (tests/support/kafka_serde.py), and the captured groups' decoded
rows (the capture itself, ``offsets_capture``, is the session's: tests/conftest.py)."""
from __future__ import annotations

import pytest

from lens_runtime.jvm_deps import kafka_jars_of, pinned_versions
from pipelines.broker_log.records import RecordDecoder, Skipped, record_row
from pipelines.broker_log.schema_set import schema_set
from tests.support.kafka_serde import KafkaSerde
from tests.support.offsets_capture import Capture


@pytest.fixture(scope="session")
def kafka_serde(tmp_path_factory: pytest.TempPathFactory) -> KafkaSerde:
    return KafkaSerde.compile(kafka_jars_of(pinned_versions().kafka), tmp_path_factory.mktemp("kafka-serde"))


@pytest.fixture(scope="session")
def captured_rows(offsets_capture: Capture) -> dict[str, list[dict]]:
    """Each driven group's decoded rows, in offset order."""
    decoder = RecordDecoder(schema_set())
    rows: dict[str, list[dict]] = {}
    for raw in sorted(offsets_capture.records, key=lambda r: (r.partition, r.offset)):
        record = decoder.decode(raw.key, raw.value)
        assert not isinstance(record, Skipped), record
        row = record_row(record, raw.partition, raw.offset, raw.timestamp_ms)
        rows.setdefault(row["group_id"], []).append(row)
    return {scenario: rows[group] for scenario, group in offsets_capture.groups.items()}
