"""The dbt YAML's ``accepted_values`` lists, written from ``pipelines.vocabulary`` so that a
new cause, kind or assignor reaches the SQL tests without editing YAML by hand.

A list follows a declaration when its ``values:`` line names it; the items below it are
rewritten in the declaration's order:

    - accepted_values:
        arguments:
          values:  # vocabulary: causes
          - enforced

    python -m pipelines.vocabulary_yaml            # list the files whose lists are stale
    python -m pipelines.vocabulary_yaml --write    # rewrite them (a test fails until then)
"""
from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from pipelines.vocabulary import ENUMERATIONS

PROJECT = Path(__file__).resolve().parents[1] / "dbt_like_sql"
MARKER = re.compile(r"^(?P<indent>[ ]*)values:[ ]*# vocabulary: (?P<name>\w+)[ ]*$")


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
        marker = MARKER.match(line.rstrip("\n"))
        if marker is None:
            continue
        if marker["name"] not in enumerations:
            raise ValueError(f"'# vocabulary: {marker['name']}' names no enumeration of pipelines/vocabulary.py "
                             f"(known: {', '.join(enumerations)})")
        item = marker["indent"] + "- "
        while i < len(lines) and lines[i].startswith(item):
            i += 1  # the list as it was
        out += [f"{item}{_scalar(value)}\n" for value in enumerations[marker["name"]]]
    return "".join(out)


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
