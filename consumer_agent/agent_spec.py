"""The agent spec (``agent-spec-v1.json``): what both agents do the same way, declared once.

The member state machines and which observation leads to which state, the ``lens.*`` options with
their types and defaults, the secrets redacted from config snapshots and the contract's constants.
The Python agent reads them here (``member_states``, ``lifecycle``, ``options``, ``redaction``,
``contract``); the Java agent carries the same file in its jar (jvm_agent/pom.xml copies it from
this folder) and reads it at start (``AgentSpec.java``). Part of the versioned contract: its
``contract_version`` is the telemetry schema's ``schema_version``.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

SPEC_FILE = "agent-spec-v1.json"
PROTOCOLS: tuple[str, ...] = ("consumer", "classic")  # the member state tables, by group.protocol


@lru_cache(maxsize=1)
def spec() -> dict[str, Any]:
    """The spec shipped in the package (parsed once; do not mutate)."""
    return json.loads(resources.files("consumer_agent").joinpath(SPEC_FILE).read_text())


def constant(name: str) -> Any:
    """The value of one of the spec's ``constants``."""
    return spec()["constants"][name]["value"]


CONTRACT_VERSION: int = spec()["contract_version"]
