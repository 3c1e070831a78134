"""rebalance-lens consumer agent: a drop-in instrumented ``confluent_kafka.Consumer``.

Adopt it in two lines: import ``InstrumentedConsumer`` instead of ``Consumer`` and add
``"lens.telemetry.topic"`` to the config.
"""
from consumer_agent.async_consumer import AsyncInstrumentedConsumer
from consumer_agent.instrumented import InstrumentedConsumer
from consumer_agent.options import DEFAULT_TELEMETRY_TOPIC
from consumer_agent.version import AGENT_VERSION

__all__ = ["AGENT_VERSION", "AsyncInstrumentedConsumer", "DEFAULT_TELEMETRY_TOPIC", "InstrumentedConsumer"]
