"""The pipeline's settings in one object, resolved in one place.

Every stage is a function of ``(spark, PipelineConfig, progress)``; the CLI, the tests, the
benchmarks and the DAGs build this object and nothing else. ``PipelineConfig.resolve`` takes
what a caller gives (by field name), else the environment, else the defaults. Each tunable
is declared once in ``SETTINGS`` with its environment variable, its command-line flag and
what it does: the CLI builds its flags from that table, and a bad value names the variable
or flag it came from and the fix.
"""
from __future__ import annotations

import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from consumer_agent.options import DEFAULT_TELEMETRY_TOPIC
from lens_runtime.broker_choice import BOOTSTRAP_ENV, find_broker
from lens_runtime.errors import LensError
from lens_runtime.paths import home
from lens_runtime.spark_session import SparkSettings
from pipelines.policy import DEFAULT_WINDOW_H

Progress = Callable[[str], Any]


def describe(counts: dict[str, int]) -> str:
    """Counts as words for a progress line: ``rows 1,389, quarantined 0``."""
    return ", ".join(f"{name.replace('_', ' ')} {count:,}" for name, count in counts.items()) or "nothing to do"


@dataclass(frozen=True)
class Setting:
    """One tunable: the config field, its environment variable and flag, and what it does."""

    field: str
    env: str
    flag: str
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("bootstrap_servers", BOOTSTRAP_ENV, "--bootstrap",
            "Kafka bootstrap servers of the telemetry topic (default: the broker of `rebalance-lens kafka up`)"),
    Setting("topic", "LENS_TELEMETRY_TOPIC", "--topic", f"telemetry topic (default {DEFAULT_TELEMETRY_TOPIC})"),
    Setting("lake_path", "LENS_LAKE", "--lake", "Delta lake path (default <home>/lake)"),
    Setting("checkpoint_path", "LENS_CHECKPOINTS", "--checkpoints",
            "streaming checkpoints and temporary spill (default <lake>/_checkpoints)"),
    Setting("spark_master", "LENS_SPARK_MASTER", "--master", "Spark master (default local[2])"),
    Setting("spark_log_level", "LENS_SPARK_LOG_LEVEL", "--spark-log-level", "Spark's log level (default WARN)"),
    Setting("max_bad_row_fraction", "LENS_MAX_BAD_FRACTION", "--max-bad-fraction",
            "fail a validation batch with more than this share of bad rows (default 0.05)"),
    Setting("episode_gap_s", "LENS_EPISODE_GAP_S", "--episode-gap",
            "seconds of quiet that end a rebalance episode (default 10)"),
    Setting("gold_lateness_s", "LENS_GOLD_LATENESS_S", "--gold-lateness",
            "seconds of events each gold run folds again, so events this late still land in order (default 900)"),
    Setting("max_clock_skew_s", "LENS_MAX_CLOCK_SKEW_S", "--max-clock-skew",
            "seconds an event's time may be after its Kafka timestamp (default 300)"),
    Setting("max_event_delay_s", "LENS_MAX_EVENT_DELAY_S", "--max-event-delay",
            "seconds an event's time may be before its Kafka timestamp (default 604800: 7 days)"),
    Setting("min_event_time_ms", "LENS_MIN_EVENT_TIME_MS", "--min-event-time",
            "epoch ms before which an event's time is a broken clock (default 2015-01-01)"),
    Setting("max_offsets_per_trigger", "LENS_MAX_OFFSETS_PER_TRIGGER", "--max-offsets-per-trigger",
            "records per ingest micro-batch (default: no limit)"),
    Setting("ingest_until_ms", "LENS_INGEST_UNTIL_MS", "--ingest-until",
            "epoch ms: ingest stops, per partition, at the first record with a Kafka timestamp at or after it "
            "(the hourly DAG passes its data interval's end; default: the end of the topic)"),
    Setting("kip848_heartbeat_ms", "LENS_KIP848_HEARTBEAT_MS", "--kip848-heartbeat-ms",
            "the brokers' group.consumer.heartbeat.interval.ms, to price KIP-848 groups (default 5000)"),
    Setting("kip848_session_timeout_ms", "LENS_KIP848_SESSION_TIMEOUT_MS", "--kip848-session-timeout-ms",
            "the brokers' group.consumer.session.timeout.ms, to price KIP-848 groups (default 45000)"),
    Setting("recommend_window_h", "LENS_RECOMMEND_WINDOW_H", "--recommend-window",
            "hours of a group's history, up to its last event, that recommend judges it on (default 168: 7 days)"),
    Setting("lock_wait_s", "LENS_LOCK_WAIT_S", "--lock-wait",
            "seconds to wait for another run on the same lake to end before giving up (default 0: give up at once)"),
)


def embedded_broker_groups() -> dict[str, int]:
    """The embedded broker's KIP-848 group settings, as PipelineConfig fields (the demo and
    the closed loop price its groups with them; a real cluster's come from flags or env)."""
    from lens_runtime.kafka_broker import FAST_TEST_SETTINGS

    return {"kip848_heartbeat_ms": int(FAST_TEST_SETTINGS["group.consumer.heartbeat.interval.ms"]),
            "kip848_session_timeout_ms": int(FAST_TEST_SETTINGS["group.consumer.session.timeout.ms"])}


def _default_lake() -> str:
    return str(home() / "lake")


@dataclass(frozen=True)
class PipelineConfig:
    """Settings for one pipeline run.

    ``max_bad_row_fraction``: a validation batch whose quarantined share exceeds this
    fails the run (after the quarantine and the summary are written, so nothing is lost).
    ``episode_gap_s``: rebalance events of a group closer than this belong to one episode.
    10 s: a rebalance's events (joins, syncs, callbacks, a cooperative second round, a
    KIP-848 reconciliation over 5 s heartbeats) come seconds apart, and the built-in
    scenarios' restarts 6 s apart are checked against ground truth with it; a longer gap
    merges distinct rebalances of a rolling restart into one episode.
    ``gold_lateness_s``: gold folds each group from its state as of this long before the
    group's newest event; an event older than that state (later than
    this) makes gold refold the group from all its events: exact, but slower. 15 min: an
    agent's buffer and the hourly run's batching delay events by seconds to minutes.
    ``max_clock_skew_s`` / ``max_event_delay_s``: an event's time may be at most this much
    after / before the Kafka timestamp of its record (the agent buffers, clocks drift).
    ``kip848_heartbeat_ms`` / ``kip848_session_timeout_ms``: the brokers' KIP-848 group
    settings (members do not report them; the recommend stage prices KIP-848 with them).
    ``ingest_until_ms``: ingest lands, per partition, the records before the first one whose
    Kafka timestamp is at or after this (epoch ms); None: up to the end of the log. A scheduler
    passes its run's data interval end, so consecutive runs land consecutive slices of the topic.
    ``recommend_window_h``: recommend judges a group on its gold of this many hours up to the
    group's last event (``pipelines.recommend.window``): what a configuration change should be
    judged on, and a bound on what one Python worker holds and replays whatever the group's age.
    ``lock_wait_s``: a run holds the lake's lock (``pipelines.lake_lock``); a second run on the
    same lake waits this long for it, then stops with one line naming the holder. 0 by default:
    an overlap is a scheduling mistake to see, not to hide behind a queue (a scheduler's retry
    waits better than a blocked process).
    ``since_ms``: recompute silver and gold for the groups with events from this time; a
    first ingest starts from it. ``kafka_options``: extra settings of the Kafka source
    (``kafka.`` prefix added), e.g. SASL for a secured telemetry cluster.
    """

    bootstrap_servers: str = ""
    lake_path: str = field(default_factory=_default_lake)
    topic: str = DEFAULT_TELEMETRY_TOPIC
    checkpoint_path: str = ""
    spark_master: str = "local[2]"
    spark_log_level: str = "WARN"
    max_bad_row_fraction: float = 0.05
    episode_gap_s: float = 10.0
    gold_lateness_s: float = 900.0
    max_clock_skew_s: float = 300.0
    max_event_delay_s: float = 7 * 86400.0
    min_event_time_ms: int = 1_420_070_400_000  # 2015-01-01: anything older is a broken clock
    max_offsets_per_trigger: int | None = None
    ingest_until_ms: int | None = None
    kip848_heartbeat_ms: int = 5_000
    kip848_session_timeout_ms: int = 45_000
    recommend_window_h: float = DEFAULT_WINDOW_H
    lock_wait_s: float = 0.0
    since_ms: int | None = None
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
        if self.gold_lateness_s < 0:
            raise LensError(f"gold_lateness_s={self.gold_lateness_s} must be >= 0 (seconds of events gold folds again)")
        if self.kip848_heartbeat_ms <= 0 or self.kip848_session_timeout_ms <= 0:
            raise LensError("kip848_heartbeat_ms and kip848_session_timeout_ms must be > 0 (milliseconds, "
                            "the brokers' group.consumer.heartbeat.interval.ms and group.consumer.session.timeout.ms)")
        if self.recommend_window_h <= 0:
            raise LensError(f"recommend_window_h={self.recommend_window_h} must be > 0 (hours of history recommend "
                            "judges a group on; --recommend-window or LENS_RECOMMEND_WINDOW_H, e.g. 168)")
        if self.lock_wait_s < 0:
            raise LensError(f"lock_wait_s={self.lock_wait_s} must be >= 0 "
                            "(seconds to wait for another run on the lake)")
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger <= 0:
            raise LensError("max_offsets_per_trigger must be a positive number of records, or None for no limit")
        if self.ingest_until_ms is not None and self.ingest_until_ms <= 0:
            raise LensError(f"ingest_until_ms={self.ingest_until_ms} must be epoch milliseconds > 0 "
                            "(--ingest-until or LENS_INGEST_UNTIL_MS), or unset to ingest to the end of the topic")
        object.__setattr__(self, "spark_log_level", self.spark_log_level.upper())
        if not self.checkpoint_path:
            object.__setattr__(self, "checkpoint_path", f"{self.lake_path.rstrip('/')}/_checkpoints")

    @classmethod
    def resolve(cls, environ: Mapping[str, str] | None = None, **given: Any) -> PipelineConfig:
        """Given values (None: not given) win over the environment, which wins over the defaults.

        Values may be text (from a flag or a variable) or typed; text is parsed by the
        field's type. Without a broker address, the broker of ``rebalance-lens kafka up``
        is used when it runs (``lens_runtime.broker_choice``: the rule of every command).
        """
        environ = os.environ if environ is None else environ
        types = typing.get_type_hints(cls)
        names = {f.name for f in fields(cls)}
        unknown = set(given) - names
        if unknown:
            raise LensError(f"unknown pipeline setting {sorted(unknown)[0]!r}: choose from {', '.join(sorted(names))}")
        values = {name: value for name, value in given.items() if value is not None}
        for setting in SETTINGS:
            source = setting.flag
            if setting.field not in values and environ.get(setting.env):
                values[setting.field], source = environ[setting.env], setting.env
            if isinstance(values.get(setting.field), str):
                values[setting.field] = _parse(values[setting.field], types[setting.field], source)
        if not values.get("bootstrap_servers"):  # the rule every command uses (lens_runtime.broker_choice)
            found = find_broker(environ=environ)
            values["bootstrap_servers"] = found.bootstrap_servers if found else ""
        return cls(**values)

    def spark_settings(self, app_name: str) -> SparkSettings:
        """The Spark session's settings for this run."""
        return SparkSettings(master=self.spark_master, lake=self.lake_path, log_level=self.spark_log_level,
                             app_name=app_name)


def _parse(text: str, kind: Any, source: str) -> Any:
    """``text`` as the field's type; a LensError naming ``source`` (flag or variable) and the fix."""
    target = next((t for t in typing.get_args(kind) if t is not type(None)), kind)
    if target is str:
        return text
    try:
        return target(text)
    except ValueError:
        raise LensError(f"{source}={text!r} is not {'an integer' if target is int else 'a number'}: "
                        f"give e.g. {source}={'1000' if target is int else '0.5'}") from None
