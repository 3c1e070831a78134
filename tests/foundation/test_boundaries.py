"""The packages keep to their side (fast, no Spark, no broker; the source read as Python's AST):

- no module uses a private name (``_name``) of another top-level package, by import or as an
  attribute (``from pipelines.lake import _create``, ``lake._create``): what another package
  needs is public API of its rightful module;
- ``lens_cli/`` writes nothing to the lake itself: it reads through ``pipelines.lake``'s readers
  only and calls no writer of Spark or Delta. Every lake write is a pipelines function that holds
  the lake's lock (``pipelines.lake_lock``);
- every module sits in a layer (``LAYERS``) and imports nothing of a layer above its own, and no
  modules import each other in a circle, counting every import: a lazy one in a function and one
  under ``TYPE_CHECKING`` too.

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


# The house's layers, bottom first: a module imports from its own layer and those below it only
# (by the longest prefix that names it). The pipelines' layers follow the data: the declarations
# every stage and the report read, the lake, the stages in their order, the runner; the report
# stands on the declarations alone (``pip install 'rebalance-lens[report]'`` has no Spark).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the agent and its contract", ("consumer_agent",)),
    ("what every part stands on", ("lens_runtime",)),
    ("the scenarios", ("lens_scenarios",)),
    ("the pipelines' declarations", ("pipelines", "pipelines.policy", "pipelines.vocabulary",
                                     "pipelines.vocabulary_yaml", "pipelines.measures", "pipelines.telemetry_types",
                                     "pipelines.catalog", "pipelines.config")),
    ("the report", ("tuning_report",)),
    ("the lake", ("pipelines.lake", "pipelines.lake_lock", "pipelines.migrations", "pipelines.sequences",
                  "pipelines.scope")),
    ("stage 1, ingest", ("pipelines.ingest",)),
    ("stage 2, validate", ("pipelines.validate",)),
    ("stage 3, silver", ("pipelines.silver",)),
    ("stage 4, gold", ("pipelines.gold",)),
    ("the simulator", ("pipelines.simulator",)),
    ("stage 5, recommend", ("pipelines.recommend",)),
    ("stage 6, the SQL marts", ("pipelines.sql_build",)),
    ("the daily maintenance", ("pipelines.maintenance",)),
    ("the runner", ("pipelines.stages",)),
    ("the commands, the schedule and the checks", ("lens_cli", "lens_airflow", "dags", "benchmarks", "tests")),
)


def _module_of(path: Path) -> str:
    """A file's dotted module name (``airflow/dags/x.py``: dags.x; a package's ``__init__``: the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts = parts[1:] if parts[0] == "airflow" else parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_of(p): p for p in _sources() if len(p.relative_to(ROOT).parts) > 1}


def _house_module(name: str, modules: set[str]) -> str | None:
    """The module of the house ``name`` is or lies in (``pipelines.lake.read``: pipelines.lake)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(source: str, module: str, modules: set[str], package: bool = False) -> set[str]:
    """The house's modules ``source`` (module ``module``; ``package``: its ``__init__``) imports
    anywhere in it: at the top, in a function (a lazy import is an import all the same), under
    ``TYPE_CHECKING``."""
    here = module.split(".") if package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {_house_module(a.name, modules) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*here[:len(here) + 1 - node.level], node.module or ""]) if node.level else node.module
            found |= {_house_module(f"{base}.{a.name}".strip("."), modules) for a in node.names}
    return {m for m in found if m is not None and m != module}


def import_graph() -> dict[str, set[str]]:
    """Every module of the house -> the house's modules it imports."""
    return {m: imports_of(p.read_text(), m, set(MODULES), p.name == "__init__.py") for m, p in MODULES.items()}


def layer_of(module: str) -> int | None:
    """The index in ``LAYERS`` of the layer whose longest prefix names ``module`` (None: no layer)."""
    named = [(len(prefix), i) for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
             if module == prefix or module.startswith(f"{prefix}.")]
    return max(named)[1] if named else None


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Each import that runs from a layer to one above it, in words."""
    return sorted(f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
                  for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: every set of modules each of which imports, through the others, each other
    one (the strongly connected components of more than one module, Tarjan's), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_graph_checks_find_what_they_look_for():
    modules = {"pipelines.lake", "pipelines.recommend.rules", "tuning_report.page", "consumer_agent.agent"}
    lazy = ("from pipelines.lake import read\nimport consumer_agent.agent as a\ndef f():\n"
            "    from pipelines.recommend import rules\n    import json\n")
    assert imports_of(lazy, "tuning_report.page", modules) == {"pipelines.lake", "pipelines.recommend.rules",
                                                                "consumer_agent.agent"}
    graph = {"tuning_report.page": {"pipelines.recommend.rules", "pipelines.policy"}, "pipelines.policy": set(),
             "pipelines.recommend.rules": {"pipelines.recommend.plan"},
             "pipelines.recommend.plan": {"pipelines.recommend.rules", "pipelines.policy"}}
    assert upward(graph) == ["tuning_report.page (the report) imports pipelines.recommend.rules "
                             "(stage 5, recommend)"]
    assert circles(graph) == [["pipelines.recommend.plan", "pipelines.recommend.rules"]]
    assert layer_of("pipelines.recommend.kinds") > layer_of("pipelines.simulator.replay") > layer_of("pipelines")


def test_every_module_has_a_layer_and_no_import_runs_back_up_the_layers():
    graph = import_graph()
    assert len(graph) > 150 and {"pipelines.policy", "tuning_report.page", "lens_cli.main"} <= set(graph)
    assert sorted(m for m in graph if layer_of(m) is None) == []
    assert upward(graph) == []


def test_no_import_circle_anywhere_in_the_house():
    assert circles(import_graph()) == []
