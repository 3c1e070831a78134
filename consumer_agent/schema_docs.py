"""The telemetry contract's reference, generated from the schema and the agent spec so they never drift apart.

    python -m consumer_agent.schema_docs            # print the schema's table and the spec's section
    python -m consumer_agent.schema_docs --write    # replace them in docs/telemetry-contract.md between the markers
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from consumer_agent.agent_spec import PROTOCOLS, SPEC_FILE, spec as agent_spec
from consumer_agent.contract import BODY_DEFINITIONS, KIND_BODIES, schema as contract_schema

BEGIN = "<!-- telemetry-table:begin -->"
END = "<!-- telemetry-table:end -->"
SPEC_BEGIN = "<!-- agent-spec:begin -->"
SPEC_END = "<!-- agent-spec:end -->"
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


def cell(text: object) -> str:
    """``text`` as one Markdown table cell (pipes escaped, one line)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


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


# ------------------------------------------------------------------ the agent spec
def _codes(values: list[Any]) -> str:
    return ", ".join(f"`{v}`" for v in values)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell(c) for c in row) + " |" for row in rows)]


def _constants(doc: dict[str, Any]) -> list[str]:
    rows = [[f"`{name}`", f"`{c['value']}`", c["description"]] for name, c in doc["constants"].items()]
    envelope = doc["envelope"]
    return ["**Constants**", "", *_table(["name", "value", "description"], rows), "",
            f"**The envelope where the client cannot answer**: `{envelope['generation_when_unreadable']}`. "
            + cell(envelope["description"])]


def _options(doc: dict[str, Any]) -> list[str]:
    options = doc["options"]
    rows = []
    for key, entry in options["keys"].items():
        kind = entry["type"] + (f" ({', '.join(entry['choices'])})" if "choices" in entry else "")
        default = "required" if entry.get("required") else f"`{json.dumps(entry['default'])}`"
        rows.append([f"`{key}`", kind, default, entry["description"]])
    return ["**Options** (`" + options["prefix"] + "*`): " + cell(options["description"]), "",
            *_table(["key", "type", "default", "description"], rows), "",
            f"- `{options['producer_prefix']}<producer setting>`: {cell(options['producer_prefix_description'])}",
            f"- cluster address ({_codes(options['bootstrap_keys'])}): "
            + cell(options["bootstrap_keys_description"]),
            f"- inherited ({_codes(options['inherited_prefixes'])}): "
            + cell(options["inherited_prefixes_description"])]


def _assignors(doc: dict[str, Any]) -> list[str]:
    table = doc["client_assignors"]
    rows = [[f"`{name}`", _codes(entry["names"]), ", ".join(entry["protocols"]),
             cell(entry.get("description", ""))] for name, entry in table["assignors"].items()]
    return ["**Client assignors** (classic protocol): " + cell(table["description"]), "",
            *_table(["assignor", "names", "rebalance protocols", "note"], rows)]


def _secrets(doc: dict[str, Any]) -> list[str]:
    secrets = doc["secrets"]
    examples = secrets["examples"]
    lines = [f"**Secrets**: {cell(secrets['description'])}", "",
             f"- replaced by `{secrets['replacement']}`: keys containing {_codes(secrets['key_markers'])}. "
             + cell(secrets["key_markers_description"])]
    lines += [f"- in any value, `{p['pattern']}`: {cell(p['description'])}" for p in secrets["value_patterns"]]
    lines += [f"- redacted, for example: {_codes(examples['secret_keys'])}",
              f"- kept, for example: {_codes(examples['kept_keys'])}"]
    lines += [f"- `{case['value']}` is shown as `{case['shown']}`" for case in examples["values"]]
    return lines


def _states(doc: dict[str, Any]) -> list[str]:
    tables = doc["member_states"]
    lines = [f"**Member states**: {cell(tables['description'])}"]
    for protocol in PROTOCOLS:
        rows = [[f"`{state}`", _codes(entry["entered_from"]), entry.get("description", "")]
                for state, entry in tables[protocol]["states"].items()]
        lines += ["", f"`{protocol}`: {cell(tables[protocol]['description'])}", "",
                  *_table(["state", "entered from", "description"], rows)]
    return lines


def _lifecycle(doc: dict[str, Any]) -> list[str]:
    lifecycle = doc["lifecycle"]
    paths = [[f"`{name}`", *(" → ".join(path[p]) for p in PROTOCOLS), path["description"]]
             for name, path in lifecycle["paths"].items()]
    paths.append(["`rejoin_from`", *(_codes(lifecycle["rejoin_from"][p]) for p in PROTOCOLS),
                  lifecycle["rejoin_from"]["description"]])
    reasons = [[f"`{name}`", f"`{text}`"] for name, text in lifecycle["reasons"].items()]
    return [f"**Lifecycle**: {cell(lifecycle['description'])}", "",
            *_table(["observation", *PROTOCOLS, "description"], paths), "",
            f"**Reasons**: {cell(lifecycle['reasons_description'])}", "", *_table(["name", "reason"], reasons), "",
            f"Leaving states: {_codes(lifecycle['leaving_states'])}. "
            + cell(lifecycle["leaving_states_description"])]


def render_spec() -> str:
    """Markdown: constants, options, client assignors, secrets, the state tables and the lifecycle."""
    doc = agent_spec()
    out = [f"Generated from `consumer_agent/{SPEC_FILE}` (contract version {doc['contract_version']}) by "
           f"`python -m consumer_agent.schema_docs --write`; a test keeps it current. {cell(doc['description'])}"]
    for section in (_constants, _options, _assignors, _secrets, _states, _lifecycle):
        out += ["", *section(doc)]
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
    table, section = render_table(), render_spec()
    if args.write:
        document = replace_between(CONTRACT_DOC.read_text(), table)
        CONTRACT_DOC.write_text(replace_between(document, section, SPEC_BEGIN, SPEC_END))
    else:
        print(table, section, sep="\n\n")


if __name__ == "__main__":
    main()
