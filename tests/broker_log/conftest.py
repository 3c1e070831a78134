"""One capture of real groups' records shared by the broker source's tests (about 10 s), and
Kafka's own serde compiled once (tests/support/offsets_capture.py, tests/support/kafka_serde.py)."""
from __future__ import annotations

import uuid

import pytest

from lens_runtime.jvm_deps import kafka_jars_of, pinned_versions
from pipelines.broker_log.records import RecordDecoder, Skipped, record_row
from pipelines.broker_log.schema_set import schema_set
from tests.support.kafka_serde import KafkaSerde
from tests.support.offsets_capture import Capture, capture_offsets


@pytest.fixture(scope="session")
def offsets_capture(kafka) -> Capture:
    return capture_offsets(kafka, uuid.uuid4().hex[:8])


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
