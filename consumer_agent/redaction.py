"""Secrets never leave the process: config snapshots are redacted before they are emitted."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REDACTED = "[redacted]"
# Substrings of config keys that name secrets (sasl.password, ssl.key.location, sasl.oauthbearer.client.secret,
# sasl.jaas.config, ...). Matching is deliberately broad: one redaction too many costs nothing, one leak costs a lot.
SECRET_MARKERS: tuple[str, ...] = ("password", "secret", "key", "token", "jaas", "credentials")


def is_secret(key: str) -> bool:
    """A key is secret when its lower-cased name contains any of ``SECRET_MARKERS``."""
    lowered = key.lower()
    return any(marker in lowered for marker in SECRET_MARKERS)


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
            snapshot[key] = str(value)
    return snapshot
