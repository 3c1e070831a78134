"""Where rebalance-lens keeps its caches and local state."""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def home() -> Path:
    """The cache root: $REBALANCE_LENS_HOME, else the checkout's .cache, else ~/.cache/rebalance-lens.

    A source checkout keeps everything beside itself (git-ignored) so that
    deleting the clone removes every trace; an installed wheel uses the user cache.
    """
    env = os.environ.get("REBALANCE_LENS_HOME")
    if env:
        return Path(env).expanduser().resolve()
    checkout = PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "pipelines").is_dir():
        return checkout / ".cache"
    return Path.home() / ".cache" / "rebalance-lens"
