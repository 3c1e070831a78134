"""The agent's own ``lens.*`` options, taken out of the consumer config before librdkafka sees it.

Their keys, types and defaults are the agent spec's (``options``), which the Java agent reads
too: one config works for both agents. The config arrives as ``Consumer`` takes it (a dict,
keyword arguments, or both: ``merged_config`` applies the client's own rules), so the agent reads
exactly the settings librdkafka will get.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from consumer_agent.agent_spec import constant, spec

_OPTIONS = spec()["options"]
PREFIX: str = _OPTIONS["prefix"]
TELEMETRY_PREFIX: str = _OPTIONS["producer_prefix"]
TOPIC_KEY = "lens.telemetry.topic"
DEFAULT_TELEMETRY_TOPIC: str = constant("default_telemetry_topic")
# key -> its spec entry (type, default, description)
OPTION_KEYS: dict[str, dict[str, Any]] = _OPTIONS["keys"]
PROCESSING_MODES: tuple[str, ...] = tuple(OPTION_KEYS["lens.processing"]["choices"])
# The cluster address, under librdkafka's two names for it.
BOOTSTRAP_KEYS: tuple[str, ...] = tuple(_OPTIONS["bootstrap_keys"])
# Consumer settings the telemetry producer inherits unless lens.telemetry.* overrides them:
# the cluster address and how to authenticate to it.
INHERITED_PREFIXES: tuple[str, ...] = tuple(_OPTIONS["inherited_prefixes"])


def field_name(key: str) -> str:
    """The ``AgentOptions`` field of option ``key``: ``lens.commit.on.revoke`` -> ``commit_on_revoke``."""
    return key[len(PREFIX):].replace(".", "_")


def _default(key: str) -> Any:
    return OPTION_KEYS[key]["default"]


@dataclass(frozen=True)
class AgentOptions:
    """Validated agent options (see ``InstrumentedConsumer`` for what each one does); a test keeps
    the fields equal to the spec's keys."""

    telemetry_topic: str
    # None: no cluster to send telemetry to (no bootstrap.servers anywhere): telemetry is off.
    producer_config: dict[str, Any] | None = field(default_factory=dict)
    # How to reach the consumer's own cluster (its address and authentication), for the emitter to
    # ask its cluster id; None without an address.
    cluster_config: dict[str, Any] | None = None
    commit_on_revoke: bool = _default("lens.commit.on.revoke")
    commit_on_revoke_timeout_ms: int = _default("lens.commit.on.revoke.timeout.ms")
    processing: str = _default("lens.processing")
    progress_interval_ms: int = _default("lens.progress.interval.ms")
    buffer_max_events: int = _default("lens.buffer.max.events")


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


def _as_choice(key: str, value: Any) -> str:
    choices = OPTION_KEYS[key]["choices"]
    if value not in choices:
        raise ValueError(f"{key} must be one of {', '.join(choices)}, got {value!r}")
    return value


_PARSERS = {"boolean": _as_bool, "positive_integer": _as_positive_int, "choice": _as_choice}


def parse_option(key: str, value: Any) -> Any:
    """``value`` of the spec's option ``key``, checked against its type; ValueError naming the key."""
    return _PARSERS[OPTION_KEYS[key]["type"]](key, value)


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


def _parsed(lens: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``lens.*`` keys but the topic: (AgentOptions field -> value, producer setting -> value)."""
    values: dict[str, Any] = {}
    producer_overrides: dict[str, Any] = {}
    for key, value in lens.items():
        if key in OPTION_KEYS:
            values[field_name(key)] = parse_option(key, value)
        elif key.startswith(TELEMETRY_PREFIX):
            producer_overrides[key[len(TELEMETRY_PREFIX):]] = value
        else:
            known = sorted(k for k in OPTION_KEYS if k != TOPIC_KEY)
            raise ValueError(f"Unknown agent option {key!r}; known: {TOPIC_KEY}, "
                             f"{TELEMETRY_PREFIX}<producer setting>, {', '.join(known)}.")
    return values, producer_overrides


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
    topic = lens.pop(TOPIC_KEY, None)
    if not topic or not isinstance(topic, str):
        raise ValueError(f'Set "{TOPIC_KEY}" (e.g. "{DEFAULT_TELEMETRY_TOPIC}") in the consumer config: '
                         "it names the topic the agent writes its telemetry to.")
    values, producer_overrides = _parsed(lens)
    inherited = {k: v for k, v in consumer.items() if isinstance(k, str) and k.startswith(INHERITED_PREFIXES)}
    cluster = inherited if any(inherited.get(k) for k in BOOTSTRAP_KEYS) else None
    if any(k in producer_overrides for k in BOOTSTRAP_KEYS):  # the telemetry cluster is another one
        inherited = {k: v for k, v in inherited.items() if k not in BOOTSTRAP_KEYS}
    producer: dict[str, Any] | None = {**inherited, **producer_overrides}
    if not any(producer.get(k) for k in BOOTSTRAP_KEYS):
        producer = None
    return AgentOptions(telemetry_topic=topic, producer_config=producer, cluster_config=cluster, **values), consumer
