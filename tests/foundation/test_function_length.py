"""No function outside tests is longer than 60 lines (the house style): a longer one is split into
named steps that read as its outline. Fast: the source read as Python's AST.

A function's length runs from its ``def`` line to its last line, docstring and nested functions
included (a nested function counts in its own right too). The checker is run on a planted
function as well, so a checker that finds nothing fails."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 60


def _sources() -> Iterator[Path]:
    """Every Python file of the tree but the tests (and hidden folders: the virtualenv, caches)."""
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] != "tests" and not any(part.startswith(".") for part in parts):
            yield path


def too_long(source: str, limit: int = MAX_LINES) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of each function of ``source`` longer than ``limit`` lines."""
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > limit]


def test_no_function_outside_tests_is_over_60_lines():
    found = [f"{path.relative_to(ROOT)}:{line} {name} ({lines} lines)"
             for path in _sources() for name, line, lines in too_long(path.read_text())]
    assert found == [], f"split into named steps (at most {MAX_LINES} lines each): {found}"


def test_the_checker_finds_a_long_function_and_counts_its_lines():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES - 1))
    planted = f"class C:\n    async def long(self):\n    {body.replace(chr(10) + '    ', chr(10) + '        ')}"
    assert too_long(f"def fits():\n{body}") == []  # 60 lines: the def and 59
    assert too_long(f"def long():\n{body}    y = 0\n") == [("long", 1, MAX_LINES + 1)]
    assert too_long(planted.rstrip() + "\n        y = 0\n") == [("long", 2, MAX_LINES + 1)]
    assert len(list(_sources())) > 100 and not any("tests" == p.relative_to(ROOT).parts[0] for p in _sources())
