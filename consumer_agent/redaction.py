"""Secrets never leave the process: config snapshots are redacted before they are emitted.

What is secret is the agent spec's (``secrets``), which the Java agent reads too: the same keys
are redacted by both agents, and the userinfo of a URL in any value.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from consumer_agent.agent_spec import spec

_SECRETS = spec()["secrets"]
REDACTED: str = _SECRETS["replacement"]
# Substrings of config keys that name secrets (sasl.password, ssl.key.location, sasl.oauthbearer.client.secret,
# sasl.jaas.config, basic.auth.user.info, ...). Matching is deliberately broad: one redaction too many costs
# nothing, one leak costs a lot.
SECRET_MARKERS: tuple[str, ...] = tuple(_SECRETS["key_markers"])
# Parts of any value that are secret (a URL's user:password@).
VALUE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p["pattern"]) for p in _SECRETS["value_patterns"])


def is_secret(key: str) -> bool:
    """A key is secret when its lower-cased name contains any of ``SECRET_MARKERS``."""
    lowered = key.lower()
    return any(marker in lowered for marker in SECRET_MARKERS)


def redacted_value(text: str) -> str:
    """``text`` with the parts ``VALUE_PATTERNS`` match replaced."""
    for pattern in VALUE_PATTERNS:
        text = pattern.sub(lambda _match: REDACTED, text)  # literally, whatever REDACTED holds
    return text


def redacted_config(config: Mapping[str, Any]) -> dict[str, str]:
    """A string-valued copy of ``config`` with secret values replaced; callables shown by name."""
    snapshot: dict[str, str] = {}
    for key, value in config.items():
        key = str(key)
        if is_secret(key):
            snapshot[key] = REDACTED
        elif callable(value):
            snapshot[key] = f"<callable {getattr(value, '__qualname__', type(value).__name__)}>"
        else:
            snapshot[key] = redacted_value(str(value))
    return snapshot
