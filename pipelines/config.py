"""The pipeline's settings in one object: where to read, where to write, how strict to be.

Every job is a function of ``(spark, PipelineConfig)``; the CLI, the tests and the
scenario runner build this object and nothing else. Settings come from arguments,
else the environment (``LENS_KAFKA_BOOTSTRAP``, ``LENS_TELEMETRY_TOPIC``,
``LENS_LAKE``, ``LENS_CHECKPOINTS``), else the embedded defaults.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from pipelines.errors import LensError

DEFAULT_TOPIC = "rebalance-lens-telemetry"


@dataclass(frozen=True)
class PipelineConfig:
    """Settings for one pipeline run.

    ``max_bad_row_fraction``: a validation batch whose quarantined share exceeds this
    fails the run (after the quarantine and the summary are written, so nothing is lost).
    ``episode_gap_s``: rebalance events of a group closer than this belong to one episode.
    ``max_clock_skew_s`` / ``max_event_delay_s``: an event's time may be at most this much
    after / before the Kafka timestamp of its record (the agent buffers, clocks drift).
    """

    bootstrap_servers: str
    lake_path: str
    topic: str = DEFAULT_TOPIC
    checkpoint_path: str = ""
    max_bad_row_fraction: float = 0.05
    episode_gap_s: float = 30.0
    max_clock_skew_s: float = 300.0
    max_event_delay_s: float = 7 * 86400.0
    min_event_time_ms: int = 1_420_070_400_000  # 2015-01-01: anything older is a broken clock
    max_offsets_per_trigger: int | None = None
    kafka_options: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.lake_path:
            raise LensError("lake_path is empty: pass --lake or set LENS_LAKE")
        if not self.topic:
            raise LensError("topic is empty: pass --topic or set LENS_TELEMETRY_TOPIC")
        if not 0.0 <= self.max_bad_row_fraction <= 1.0:
            raise LensError(f"max_bad_row_fraction={self.max_bad_row_fraction} is outside [0, 1]: "
                            "use e.g. 0.05 to fail a batch with more than 5% bad rows")
        if self.episode_gap_s <= 0:
            raise LensError(f"episode_gap_s={self.episode_gap_s} must be > 0 (seconds between two rebalances)")
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger <= 0:
            raise LensError("max_offsets_per_trigger must be a positive number of records, or None for no limit")
        if not self.checkpoint_path:
            object.__setattr__(self, "checkpoint_path", f"{self.lake_path.rstrip('/')}/_checkpoints")

    @classmethod
    def resolve(cls, bootstrap_servers: str | None = None, lake_path: str | None = None,
                topic: str | None = None, **overrides) -> "PipelineConfig":
        """Arguments win over the environment, which wins over the defaults."""
        from pipelines.runtime.paths import home

        return cls(
            bootstrap_servers=bootstrap_servers or os.environ.get("LENS_KAFKA_BOOTSTRAP", ""),
            lake_path=lake_path or os.environ.get("LENS_LAKE", str(home() / "lake")),
            topic=topic or os.environ.get("LENS_TELEMETRY_TOPIC", DEFAULT_TOPIC),
            checkpoint_path=overrides.pop("checkpoint_path", None) or os.environ.get("LENS_CHECKPOINTS", ""),
            **overrides,
        )
