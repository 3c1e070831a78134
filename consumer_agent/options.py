"""The agent's own ``lens.*`` options, taken out of the consumer config before librdkafka sees it.

The config arrives as ``Consumer`` takes it (a dict, keyword arguments, or both:
``merged_config`` applies the client's own rules), so the agent reads exactly the
settings librdkafka will get.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PREFIX = "lens."
TELEMETRY_PREFIX = "lens.telemetry."
DEFAULT_TELEMETRY_TOPIC = "rebalance-lens-telemetry"
PROCESSING_MODES = ("on_next_poll", "explicit")
# The cluster address, under librdkafka's two names for it.
BOOTSTRAP_KEYS = ("bootstrap.servers", "metadata.broker.list")
# Consumer settings the telemetry producer inherits unless lens.telemetry.* overrides them:
# the cluster address and how to authenticate to it.
INHERITED_PREFIXES = (*BOOTSTRAP_KEYS, "security.protocol", "sasl.", "ssl.", "client.dns.lookup")


@dataclass(frozen=True)
class AgentOptions:
    """Validated agent options (see ``InstrumentedConsumer`` for what each one does)."""

    telemetry_topic: str
    # None: no cluster to send telemetry to (no bootstrap.servers anywhere): telemetry is off.
    producer_config: dict[str, Any] | None = field(default_factory=dict)
    # How to reach the consumer's own cluster (its address and authentication), for the emitter to
    # ask its cluster id; None without an address.
    cluster_config: dict[str, Any] | None = None
    commit_on_revoke: bool = False
    commit_on_revoke_timeout_ms: int = 30_000
    processing: str = "on_next_poll"
    progress_interval_ms: int = 5_000
    buffer_max_events: int = 10_000


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"{key} must be true or false, got {value!r}")


def _as_positive_int(key: str, value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a positive integer, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"{key} must be a positive integer, got {value!r}")
    return number


def is_agent_option(key: Any) -> bool:
    """A ``lens.*`` key (a key that is no string is librdkafka's to refuse, in its own words)."""
    return isinstance(key, str) and key.startswith(PREFIX)


def merged_config(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The one config dict ``Consumer(*args, **kwargs)`` builds: a dict argument updated with the
    keyword arguments (they win). None when the client refuses those arguments: the caller then
    lets ``Consumer`` raise its own error, word for word."""
    if not args:
        return dict(kwargs)
    if len(args) == 1 and isinstance(args[0], dict):
        return {**args[0], **kwargs}
    return None


def split_config(config: Mapping[str, Any]) -> tuple[AgentOptions, dict[str, Any]]:
    """Split ``config`` into the agent's options and the plain consumer config.

    Raises ValueError naming the key when an option is missing, unknown or malformed,
    so a typo never silently disables a safety feature such as commit-on-revoke. A config
    with no cluster address (broker-less unit tests build such consumers) is accepted, as
    ``Consumer`` accepts it: its options say telemetry is off (``producer_config`` None).
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"InstrumentedConsumer takes a config dict, got {type(config).__name__}")
    lens = {k: v for k, v in config.items() if is_agent_option(k)}
    consumer = {k: v for k, v in config.items() if not is_agent_option(k)}
    topic = lens.pop("lens.telemetry.topic", None)
    if not topic or not isinstance(topic, str):
        raise ValueError('Set "lens.telemetry.topic" (e.g. "rebalance-lens-telemetry") in the consumer config: '
                         "it names the topic the agent writes its telemetry to.")
    known = {
        "lens.commit.on.revoke": lambda k, v: ("commit_on_revoke", _as_bool(k, v)),
        "lens.commit.on.revoke.timeout.ms": lambda k, v: ("commit_on_revoke_timeout_ms", _as_positive_int(k, v)),
        "lens.processing": lambda k, v: ("processing", _processing(k, v)),
        "lens.progress.interval.ms": lambda k, v: ("progress_interval_ms", _as_positive_int(k, v)),
        "lens.buffer.max.events": lambda k, v: ("buffer_max_events", _as_positive_int(k, v)),
    }
    values: dict[str, Any] = {}
    producer_overrides: dict[str, Any] = {}
    for key, value in lens.items():
        if key in known:
            name, parsed = known[key](key, value)
            values[name] = parsed
        elif key.startswith(TELEMETRY_PREFIX):
            producer_overrides[key[len(TELEMETRY_PREFIX):]] = value
        else:
            raise ValueError(f"Unknown agent option {key!r}; known: lens.telemetry.topic, "
                             f"lens.telemetry.<producer setting>, {', '.join(sorted(known))}.")
    inherited = {k: v for k, v in consumer.items() if isinstance(k, str) and k.startswith(INHERITED_PREFIXES)}
    cluster = inherited if any(inherited.get(k) for k in BOOTSTRAP_KEYS) else None
    if any(k in producer_overrides for k in BOOTSTRAP_KEYS):  # the telemetry cluster is another one
        inherited = {k: v for k, v in inherited.items() if k not in BOOTSTRAP_KEYS}
    producer: dict[str, Any] | None = {**inherited, **producer_overrides}
    if not any(producer.get(k) for k in BOOTSTRAP_KEYS):
        producer = None
    return AgentOptions(telemetry_topic=topic, producer_config=producer, cluster_config=cluster, **values), consumer


def _processing(key: str, value: Any) -> str:
    if value not in PROCESSING_MODES:
        raise ValueError(f"{key} must be one of {', '.join(PROCESSING_MODES)}, got {value!r}")
    return value
