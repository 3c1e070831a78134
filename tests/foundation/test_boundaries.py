"""The packages keep to their side (fast, no Spark, no broker; the source read as Python's AST):

- no module uses a private name (``_name``) of another top-level package, by import or as an
  attribute (``from pipelines.lake import _create``, ``lake._create``): what another package
  needs is public API of its rightful module;
- ``lens_cli/`` writes nothing to the lake itself: it reads through ``pipelines.lake``'s readers
  only and calls no writer of Spark or Delta. Every lake write is a pipelines function that holds
  the lake's lock (``pipelines.lake_lock``).

Each check is also run on a snippet that breaks it, so a checker that finds nothing fails too.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What lens_cli may call of pipelines.lake: the functions that only read. An allow-list, so a
# writer added to lake.py later is refused here without a change to this test.
LAKE_READERS = {"exists", "missing_locally", "read", "rows_of", "version", "validated_through", "stage_mark"}
# Spark's and Delta's writers, by attribute (df.write..., spark.sql("INSERT ..."), DeltaTable...).
WRITER_ATTRIBUTES = {"write", "writeTo", "writeStream", "saveAsTable", "insertInto", "save", "DeltaTable", "sql"}


def _sources() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if not any(part.startswith(".") for part in parts):
            yield path


def _package_of(path: Path) -> str:
    """The top-level import name a file belongs to (``airflow/lens_airflow/x.py``: lens_airflow)."""
    parts = path.relative_to(ROOT).parts
    return parts[1] if parts[0] == "airflow" and len(parts) > 2 else parts[0]


PACKAGES = {name for name in map(_package_of, _sources()) if not name.endswith(".py")}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _imported(tree: ast.AST) -> dict[str, str]:
    """Local name -> the dotted name it was imported as, for every absolute import."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.AST, names: dict[str, str]) -> str | None:
    """``a.b.c`` with ``a`` resolved through the imports, or None when it does not start at one."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, names)
        return f"{base}.{node.attr}" if base else None
    return None


def private_uses(source: str, package: str) -> list[str]:
    """Private names of other top-level packages of this repository that ``source`` uses."""
    tree = ast.parse(source)
    names = _imported(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            owner = node.module.split(".")[0]
            found += [f"from {node.module} import {a.name}" for a in node.names
                      if owner in PACKAGES and owner != package and _private(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            base = _dotted(node.value, names)
            owner = base.split(".")[0] if base else None
            if owner in PACKAGES and owner != package:
                found.append(f"{base}.{node.attr}")
    return found


def lake_writes(source: str) -> list[str]:
    """What ``source`` calls that writes a lake table itself, not through a pipelines function."""
    tree = ast.parse(source)
    names = _imported(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "pipelines.lake":
            found += [f"pipelines.lake.{a.name}" for a in node.names if a.name not in LAKE_READERS]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if module and module.split(".")[0] == "delta":
                found.append(f"import of {module}")
        elif isinstance(node, ast.Attribute):
            base = _dotted(node.value, names)
            if base == "pipelines.lake" and node.attr not in LAKE_READERS:
                found.append(f"pipelines.lake.{node.attr}")
            elif node.attr in WRITER_ATTRIBUTES:
                found.append(f".{node.attr} (line {node.lineno})")
    return found


def test_the_checks_find_what_they_look_for():
    leak = "from pipelines import lake as tables\nfrom pipelines.lake import _create\ntables._layout(x)\n"
    assert sorted(private_uses(leak, "lens_cli")) == ["from pipelines.lake import _create", "pipelines.lake._layout"]
    assert private_uses(leak, "pipelines") == []  # inside its own package a private name is fine
    writer = ("from pipelines import lake as tables\nfrom pipelines.lake import read, insert_new\n"
              "tables.replace_scope(spark, p, t, rows, s)\ntables.read(spark, p, t)\ndf.write.save(p)\n")
    assert sorted(lake_writes(writer)) == [".save (line 5)", ".write (line 5)", "pipelines.lake.insert_new",
                                           "pipelines.lake.replace_scope"]


def test_no_module_uses_a_private_name_of_another_package():
    assert {"pipelines", "lens_cli", "lens_scenarios", "lens_runtime", "tests", "lens_airflow"} <= PACKAGES
    found = {str(p.relative_to(ROOT)): uses for p in _sources()
             if (uses := private_uses(p.read_text(), _package_of(p)))}
    assert found == {}


def test_the_command_line_writes_nothing_to_the_lake_itself():
    sources = sorted((ROOT / "lens_cli").glob("*.py"))
    assert len(sources) > 5
    found = {p.name: writes for p in sources if (writes := lake_writes(p.read_text()))}
    assert found == {}


# The layers their docstrings promise: the agent ships alone (pip install rebalance-lens needs only
# confluent-kafka), and the scenarios make the telemetry the pipelines are checked against, so
# neither may import the pipelines (the closed loop joins a rerun and the judgement in its caller).
NEVER_IMPORTS = {"consumer_agent": {"pipelines", "lens_scenarios", "lens_cli", "tuning_report"},
                 "lens_scenarios": {"pipelines", "lens_cli", "tuning_report"}}


def _layer_breaks(package: str, source: str) -> list[str]:
    return sorted({dotted for dotted in _imported(ast.parse(source)).values()
                   if dotted.split(".")[0] in NEVER_IMPORTS[package]})


def test_the_layer_check_finds_an_import_across():
    assert _layer_breaks("lens_scenarios", "from pipelines.recommend.closed_loop import judge\n") == \
        ["pipelines.recommend.closed_loop.judge"]
    assert _layer_breaks("lens_scenarios", "from lens_runtime.errors import LensError\n") == []


def test_the_agent_and_the_scenarios_never_import_the_pipelines():
    breaks = {str(path.relative_to(ROOT)): found for path in _sources()
              if _package_of(path) in NEVER_IMPORTS
              and (found := _layer_breaks(_package_of(path), path.read_text()))}
    assert breaks == {}
