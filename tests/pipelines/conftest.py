"""Helpers for the pipeline tests: a config on a fresh lake and topic, and feeding telemetry to it."""
from __future__ import annotations

from collections.abc import Iterable
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from pipelines.config import PipelineConfig


def _create_topic(kafka, name: str) -> str:
    """A 2-partition topic that keeps records forever: the builders' events are dated 2026-01-01,
    and the default 7-day retention would delete them in the middle of a test."""
    admin = kafka.admin()
    futures = admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1,
                                            config={"retention.ms": "-1"})], operation_timeout=30)
    futures[name].result(timeout=30)
    return name


def fresh_config(kafka, where: Path, **overrides) -> PipelineConfig:
    """A config on its own new topic and lake."""
    topic = _create_topic(kafka, f"telemetry-{uuid.uuid4().hex[:8]}")
    return PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, lake_path=str(where / "lake"), topic=topic,
                          **{"episode_gap_s": 10.0, **overrides})


@pytest.fixture
def config(kafka, tmp_path: Path) -> PipelineConfig:
    return fresh_config(kafka, tmp_path)


def feed(kafka, topic: str, records: Iterable[tuple[str | None, str | bytes | None, int]]) -> int:
    """Produce (key, value, timestamp ms) records as the agent does (key = agent_id, sent at event time)."""
    producer = kafka.producer()
    count = 0
    for key, value, timestamp in records:
        producer.produce(topic, key=key, value=value, timestamp=timestamp)
        count += 1
    producer.flush(30)
    return count
