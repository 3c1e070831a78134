"""A new user's machine for commands run in child processes: an empty REBALANCE_LENS_HOME (no
`kafka up` broker recorded, no lake) whose JVM jars point at the real cache (fetching them again
would take minutes), and no LENS_* setting from the developer's shell."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def fresh_home_env(home: Path) -> dict[str, str]:
    """The environment of a command run on a fresh home in ``home``."""
    from lens_runtime.jvm_deps import jars_dir

    home.mkdir(parents=True, exist_ok=True)
    (home / "jars").symlink_to(jars_dir())
    env = {name: value for name, value in os.environ.items() if not name.startswith("LENS_")}
    return {**env, "REBALANCE_LENS_HOME": str(home), "COLUMNS": "100"}


def stop_local_broker(env: dict[str, str]) -> None:
    """`rebalance-lens kafka down` in that home: whatever broker a command left there is stopped."""
    subprocess.run([sys.executable, "-m", "lens_cli.main", "kafka", "down"], env=env, capture_output=True,
                   timeout=120, check=False)
