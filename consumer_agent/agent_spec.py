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


def assignor_protocols(name: str, upgrade_from: str | None = None) -> tuple[str, ...]:
    """The rebalance protocols of the classic assignor ``name`` (any client's name for it; ``client_assignors``);
    empty for one the spec does not list. ``upgrade_from`` keeps some eager (Kafka Streams' upgrade.from)."""
    for assignor in spec()["client_assignors"]["assignors"].values():
        if name in assignor["names"]:
            if upgrade_from and any(upgrade_from.startswith(p) for p in assignor.get("eager_when_upgrading_from", ())):
                return ("eager",)
            return tuple(assignor["protocols"])
    return ()


def cooperative(strategy: str) -> bool:
    """Whether a classic member listing ``strategy`` (comma-separated) rebalances cooperatively: when every assignor
    it lists supports it (the client picks the highest protocol all of them support)."""
    names = [n.strip() for n in strategy.split(",") if n.strip()]
    return bool(names) and all("cooperative" in assignor_protocols(n) for n in names)


CONTRACT_VERSION: int = spec()["contract_version"]
