"""The agent's version, reported in member_config events."""
AGENT_VERSION = "0.1.0"
