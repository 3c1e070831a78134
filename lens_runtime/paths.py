"""Where rebalance-lens keeps its caches and local state."""
from __future__ import annotations

import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent  # the source checkout, when running from one


def home() -> Path:
    """The cache root: $REBALANCE_LENS_HOME, else the checkout's .cache, else ~/.cache/rebalance-lens.

    A source checkout keeps everything beside itself (git-ignored) so that
    deleting the clone removes every trace; an installed wheel uses the user cache.
    """
    env = os.environ.get("REBALANCE_LENS_HOME")
    if env:
        return Path(env).expanduser().resolve()
    if (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / "lens_runtime").is_dir():
        return CHECKOUT / ".cache"
    return Path.home() / ".cache" / "rebalance-lens"
