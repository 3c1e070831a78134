"""The scenarios the Java-member checks land (tests/e2e/test_java_members.py): built-ins with every member on
the JVM under range, cooperative-sticky (static members) and the consumer protocol, and one mixed group."""
from __future__ import annotations

import yaml

from lens_scenarios.spec import BUILTIN_DIR, Scenario, load, on_runtime, parse

# scenario -> (assignor, the members on the JVM: all, or the mixed group's)
PLAN = {"rolling-restart": ("range", "all"), "static-rolling-restart": ("cooperative-sticky", "all"),
        "crash": ("consumer", "all"), "scale-out-in": ("roundrobin", "mixed"), "turbulent-minute": ("range", "mixed")}


def _mixed(name: str) -> Scenario:
    """The built-in as its YAML, with its first member and every scaled-out one declared `runtime: java`."""
    data = yaml.safe_load((BUILTIN_DIR / f"{name}.yaml").read_text())
    data["members"][0] = {"name": data["members"][0], "runtime": "java"}
    for action in data["timeline"]:
        if action["action"] == "scale_out":
            action["members"] = [{"name": m, "runtime": "java"} for m in action["members"]]
    return parse(data, source=f"{name} (mixed)")


def scenario_of(name: str) -> Scenario:
    """What PLAN runs for ``name``: every member on the JVM (as the run option ``runtime`` does), or mixed."""
    return on_runtime(load(name), "java") if PLAN[name][1] == "all" else _mixed(name)
