"""The layout: CONTRIBUTING's map of the tree, the documents' lists of tables, marts and settings
follow the code; tests share helpers through tests/support only."""
from __future__ import annotations

import re
from itertools import takewhile
from pathlib import Path

from pipelines.catalog import BROKER_TABLES, CLOSED_LOOP_TABLES, TABLES
from pipelines.config import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text()
TABLES_DOC = (ROOT / "docs" / "tables.md").read_text()
RUNNING_DOC = (ROOT / "docs" / "running.md").read_text()


def _tree_block() -> str:
    section = CONTRIBUTING[CONTRIBUTING.index("## Layout"):]
    start = section.index("```\n") + 4
    return section[start:section.index("\n```", start)]


def _table_rows(document: str, header: str) -> str:
    """The rows of the markdown table that starts with ``header``."""
    lines = document[document.index(header):].splitlines()[2:]  # past the header and its |---| line
    return "\n".join(takewhile(lambda line: line.startswith("|"), lines))


def test_every_file_and_folder_in_the_map_exists():
    tree = _tree_block()
    folders = re.findall(r"^(\w+)/", tree, flags=re.MULTILINE)
    planned = {"dbt_like_sql", "airflow"}  # later issues, said so in the map
    assert {"consumer_agent", "lens_runtime", "pipelines", "lens_scenarios", "lens_cli"} <= set(folders)
    for folder in set(folders) - planned:
        assert (ROOT / folder).is_dir(), folder
    sources = {p.name for p in ROOT.glob("*/**/*.py") if ".venv" not in p.parts}
    for name in set(re.findall(r"(\w+\.py)\b", tree)):
        assert name in sources, name


def test_every_package_is_in_the_map():
    tree = _tree_block()
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert all(f"{name}/" in tree for name in packages), packages


def test_every_table_mart_and_setting_is_documented():
    for table in (*TABLES, *CLOSED_LOOP_TABLES, *BROKER_TABLES):
        assert f"`{table.path}` | {table.written_by} |" in TABLES_DOC, table.path
    marts = {p.stem for p in (ROOT / "dbt_like_sql" / "models" / "marts").glob("*.sql")}
    assert marts == set(re.findall(r"`(\w+)` \(", _table_rows(TABLES_DOC, "| mart (grain) |")))
    for setting in SETTINGS:
        assert f"| `{setting.flag}` | `{setting.env}` |" in RUNNING_DOC, setting.flag


def test_no_test_imports_another_test_module():
    for path in (ROOT / "tests").rglob("*.py"):
        imports = re.findall(r"^\s*(?:from|import) (tests\.[\w.]+)", path.read_text(), flags=re.MULTILINE)
        assert [name for name in imports if not name.startswith("tests.support")] == [], path


def test_the_pipelines_package_names_every_stage():
    import pipelines
    from pipelines.stages import STAGES

    assert [s for s in STAGES if f"``{s}``" not in pipelines.__doc__] == []
