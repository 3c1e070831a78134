"""Pipeline configs for tests: each on its own new telemetry topic and lake."""
from __future__ import annotations

import uuid
from pathlib import Path

from pipelines.config import PipelineConfig
from tests.support.kafka_cluster import KafkaCluster


def fresh_config(kafka: KafkaCluster, where: Path, **overrides) -> PipelineConfig:
    """A config on its own new 2-partition topic and lake. The topic keeps records forever: the
    builders' events are dated 2026-01-01, and the default 7-day retention would delete them in
    the middle of a test."""
    topic = kafka.create_topic(f"telemetry-{uuid.uuid4().hex[:8]}", partitions=2, config={"retention.ms": "-1"})
    return PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, lake_path=str(where / "lake"), topic=topic,
                          **overrides)
