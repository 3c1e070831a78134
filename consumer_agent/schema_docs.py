"""The telemetry contract's reference table, generated from the schema so the two never drift apart.

    python -m consumer_agent.schema_docs            # print the table
    python -m consumer_agent.schema_docs --write    # replace it in docs/telemetry-contract.md between the markers
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from consumer_agent.contract import BODY_DEFINITIONS, KIND_BODIES, schema as contract_schema

BEGIN = "<!-- telemetry-table:begin -->"
END = "<!-- telemetry-table:end -->"
CONTRACT_DOC = Path(__file__).resolve().parents[1] / "docs" / "telemetry-contract.md"


def _type(spec: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return "offset (int)" if name == "offset" else name
    if "const" in spec:
        return f"const {spec['const']}"
    if "enum" in spec:
        return " \\| ".join(str(v) for v in spec["enum"])
    kind = spec.get("type", "object")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and "items" in spec:
        inner = spec["items"]
        label = _type(inner, defs) if "$ref" in inner or "properties" not in inner else "object"
        return f"array of {label}"
    return " \\| ".join(kinds)


def cell(text: str) -> str:
    """``text`` as one Markdown table cell (pipes escaped, one line)."""
    return text.replace("|", "\\|").replace("\n", " ")


def _rows(prefix: str, spec: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    required = set(spec.get("required", []))
    rows = []
    for name, field in spec.get("properties", {}).items():
        rows.append(f"| `{prefix}{name}` | {_type(field, defs)} | {'yes' if name in required else 'no'} | "
                    f"{cell(field.get('description', ''))} |")
        items = field.get("items", {})
        if "properties" in items:
            rows += _rows(f"{prefix}{name}[].", items, defs)
    return rows


def render_table() -> str:
    """Markdown: the envelope, then one section per kind with its body fields."""
    schema = contract_schema()
    defs = schema["$defs"]
    out = [f"Generated from `consumer_agent/telemetry-v1.schema.json` by `python -m consumer_agent.schema_docs "
           f"--write`; a test keeps it current. {cell(schema['description'])}", "",
           "**Envelope** (every event)", "", "| field | type | required | description |", "|---|---|---|---|"]
    out += _rows("", schema, defs)
    body_defs: dict[str, list[str]] = {}
    for kind, definition in BODY_DEFINITIONS.items():
        body_defs.setdefault(definition, []).append(kind)
    for def_name, kinds in body_defs.items():
        spec = defs[def_name]
        out += ["", f"**body of {', '.join(f'`{k}`' for k in kinds)}**"
                + (f": {cell(spec['description'])}" if spec.get("description") else ""), "",
                "| field | type | required | description |", "|---|---|---|---|"]
        out += _rows("", spec, defs)
        for name, field in spec["properties"].items():
            ref = field.get("items", {}).get("$ref") or field.get("$ref")
            if ref and ref.rsplit("/", 1)[-1] in defs and "properties" in defs[ref.rsplit("/", 1)[-1]]:
                out += _rows(f"{name}[]." if "items" in field else f"{name}.", defs[ref.rsplit("/", 1)[-1]], defs)
            elif "properties" in field:
                out += _rows(f"{name}.", field, defs)
    missing = set(KIND_BODIES) - {k for kinds in body_defs.values() for k in kinds}
    if missing:
        raise ValueError(f"schema has no body rule for kinds {sorted(missing)}")
    return "\n".join(out)


def replace_between(document: str, block: str, begin: str = BEGIN, end: str = END) -> str:
    """``document`` with the text between the markers ``begin`` and ``end`` replaced by ``block``
    (every generated block of the docs is kept this way)."""
    start, stop = document.index(begin) + len(begin), document.index(end)
    return document[:start] + "\n" + block + "\n" + document[stop:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"update {CONTRACT_DOC.name} in place")
    args = parser.parse_args()
    table = render_table()
    if args.write:
        CONTRACT_DOC.write_text(replace_between(CONTRACT_DOC.read_text(), table))
    else:
        print(table)


if __name__ == "__main__":
    main()
