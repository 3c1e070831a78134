"""The dbt YAML's accepted values, written from ``pipelines.vocabulary`` so that a new cause,
kind or assignor reaches the SQL tests and the marts' rules without editing YAML by hand.

A list follows a declaration when its ``values:`` line names it; the items below it are
rewritten in the declaration's order:

    - accepted_values:
        arguments:
          values:  # vocabulary: causes
          - enforced

and so does the list of a mart's check constraint (a Delta constraint: ``<column> in (...)``)
when its ``expression:`` line names it; the expression below it, SQL text, gets the values as
literals, wrapped to the line length:

    - type: check
      name: accepted_values_cause
      expression:  # vocabulary: causes
        cause is null or cause in ('enforced', 'subscription_change', ...)

    python -m pipelines.vocabulary_yaml            # list the files whose lists are stale
    python -m pipelines.vocabulary_yaml --write    # rewrite them (a test fails until then)
"""
from __future__ import annotations

import argparse
import json
import re
import textwrap
from collections.abc import Mapping
from pathlib import Path

import yaml

from pipelines.vocabulary import ENUMERATIONS

PROJECT = Path(__file__).resolve().parents[1] / "dbt_like_sql"
MARKER = re.compile(r"^(?P<indent>[ ]*)values:[ ]*# vocabulary: (?P<name>\w+)[ ]*$")
EXPRESSION_MARKER = re.compile(r"^(?P<indent>[ ]*)expression:[ ]*# vocabulary: (?P<name>\w+)[ ]*$")
IN_LIST = re.compile(r"^(?P<head>.*\bin \()[^)]*(?P<tail>\).*)$")
WIDTH = 120


def yaml_files() -> list[Path]:
    return sorted(PROJECT.rglob("*.yml"))


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar that reads back as that string (``on``, ``null``: quoted)."""
    return value if yaml.safe_load(value) == value else json.dumps(value)


def render(text: str, enumerations: Mapping[str, tuple[str, ...]] = ENUMERATIONS) -> str:
    """``text`` (one YAML file) with every marked list replaced by its declaration's values."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        marker = MARKER.match(line.rstrip("\n")) or EXPRESSION_MARKER.match(line.rstrip("\n"))
        if marker is None:
            continue
        values = _declared(marker["name"], enumerations)
        indent = marker["indent"]
        item = indent + "- " if marker.re is MARKER else indent + "  "
        start = i
        while i < len(lines) and lines[i].startswith(item):
            i += 1  # the list (or the expression) as it was
        if marker.re is MARKER:
            out += [f"{item}{_scalar(value)}\n" for value in values]
        else:
            out += _expression(" ".join(line.strip() for line in lines[start:i]), values, item)
    return "".join(out)


def _declared(name: str, enumerations: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    if name not in enumerations:
        raise ValueError(f"'# vocabulary: {name}' names no enumeration of pipelines/vocabulary.py "
                         f"(known: {', '.join(enumerations)})")
    return enumerations[name]


def _literal(value: str) -> str:
    """A declared name as a SQL string literal: names are identifiers (no quote to escape), checked."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", value):
        raise ValueError(f"an enumeration's value must be a plain name to be written into a check: {value!r}")
    return f"'{value}'"


def _expression(expression: str, values: tuple[str, ...], indent: str) -> list[str]:
    """A check expression's ``in (...)`` list with ``values`` as SQL literals, as YAML lines under ``indent``."""
    found = IN_LIST.match(expression)
    if found is None:
        raise ValueError(f"a '# vocabulary:' expression needs one 'in (...)' list: {expression!r}")
    text = found["head"] + ", ".join(_literal(v) for v in values) + found["tail"]
    return [f"{indent}{part}\n" for part in textwrap.wrap(text, WIDTH - len(indent), break_long_words=False,
                                                          break_on_hyphens=False)]


def expression_values(expression: str) -> list[str]:
    """The values of a check expression's ``in (...)`` list, read back (the vocabulary's simple literals)."""
    found = re.search(r"\bin \(([^)]*)\)", expression)
    return [] if found is None else [v.strip().strip("'") for v in found[1].split(",") if v.strip()]


def stale(enumerations: Mapping[str, tuple[str, ...]] = ENUMERATIONS) -> list[Path]:
    """The YAML files whose marked lists differ from the declarations."""
    return [p for p in yaml_files() if render(p.read_text(), enumerations) != p.read_text()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite the stale lists in place")
    args = parser.parse_args()
    for path in stale():
        if args.write:
            path.write_text(render(path.read_text()))
        print(f"{'wrote' if args.write else 'stale'}: {path.relative_to(PROJECT.parent)}")


if __name__ == "__main__":
    main()
