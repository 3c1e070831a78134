"""rebalance-lens consumer agent: a drop-in instrumented ``confluent_kafka.Consumer``.

Adopt it in two lines: import ``InstrumentedConsumer`` instead of ``Consumer`` and add
``"lens.telemetry.topic"`` to the config.

The consumers are imported on first use: ``consumer_agent.contract`` (the telemetry
contract) is imported by Spark's Python workers for every gold task, and importing the
client with it (confluent-kafka, asyncio) cost them 0.1-0.2 s each.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from consumer_agent.options import DEFAULT_TELEMETRY_TOPIC
from consumer_agent.version import AGENT_VERSION

if TYPE_CHECKING:
    from consumer_agent.async_consumer import AsyncInstrumentedConsumer
    from consumer_agent.instrumented import InstrumentedConsumer

__all__ = ["AGENT_VERSION", "AsyncInstrumentedConsumer", "DEFAULT_TELEMETRY_TOPIC", "InstrumentedConsumer"]
_LAZY = {
    "InstrumentedConsumer": "consumer_agent.instrumented",
    "AsyncInstrumentedConsumer": "consumer_agent.async_consumer",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'consumer_agent' has no attribute {name!r}")
