"""The report as ``pip install 'rebalance-lens[report]'`` installs it: no Spark, and nothing of the
recommender or the simulator. A child process that cannot import what that install lacks imports
the report and its command, and names every module of the house it loaded."""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
# What `rebalance-lens report` loads: the page, its marts' reader, and the command with what it imports lazily.
ENTRY = ("tuning_report", "tuning_report.marts", "lens_cli.main", "lens_cli.report_commands", "pipelines.config")
HEAVY = ("pipelines.recommend", "pipelines.simulator", "pipelines.gold", "pipelines.stages")

CHILD = """
import importlib.abc, json, sys
missing = set(json.loads(sys.argv[1]))

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in missing:
            raise ModuleNotFoundError(f"{name} is not installed by rebalance-lens[report]", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
for entry in json.loads(sys.argv[2]):
    __import__(entry)
print(json.dumps(sorted(sys.modules)))
"""


def _installed_with_the_report() -> set[str]:
    """The distributions ``pip install 'rebalance-lens[report]'`` installs: the base and report
    requirements of pyproject.toml and theirs, as this environment's metadata declares them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in (*project["dependencies"], *project["optional-dependencies"]["report"])]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        name = metadata.distribution(req.name).metadata["Name"].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(req.name) or ():
            dep = Requirement(text)
            if dep.marker is None or dep.marker.evaluate({"extra": ""}):
                todo.append(dep)
    return seen


def _not_installed(installed: set[str]) -> set[str]:
    """The top-level modules of this environment's distributions that the report install lacks."""
    providers = metadata.packages_distributions()
    house = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()} | {"lens_airflow"}
    return {top for top, dists in providers.items() if top not in house and not top.startswith("_")
            and not {d.lower().replace("_", "-") for d in dists} & installed}


def test_the_report_install_loads_nothing_of_the_recommender_the_simulator_or_spark():
    installed = _installed_with_the_report()
    assert {"plotly", "polars", "jinja2", "deltalake", "confluent-kafka"} <= installed
    missing = _not_installed(installed)
    assert {"pyspark", "delta", "great_expectations", "dbt", "airflow"} <= missing and "polars" not in missing
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(sorted(missing)), json.dumps(ENTRY)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    loaded = json.loads(child.stdout)
    assert set(ENTRY) <= set(loaded) and "pipelines.policy" in loaded
    assert [m for m in loaded if m.startswith(HEAVY)] == []
