"""Hostile and malformed telemetry records, drawn by hypothesis, each with what validation must do with it.

A ``Case`` is one record to put on the real topic (key, value bytes, Kafka timestamp) and its
expected fate: ``VALID`` (lands in silver/events as it is), a set of rule names of which the
quarantine must give at least one, ``EITHER`` (valid or quarantined: the contract leaves it
open, e.g. a number where a string is expected, which Spark's JSON reader keeps as its text),
or ``REFUSED`` (the broker itself refuses it, so it never reaches the pipeline).

Cases are drawn with hypothesis and then played all at once through the real topic and
pipeline (one pipeline run per batch, not per example: a run takes seconds). ``draw`` collects
them with a fixed seed (``derandomize``) by default; a seed given explicitly (the slow suite)
explores other inputs. Every event id is made fresh after drawing, so two equal draws are two
events, not a duplicate (duplicates are made on purpose, elsewhere).
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from hypothesis import seed as with_seed

from consumer_agent import contract
from tests.support.fleets import scale_out_then_crash

VALID: frozenset[str] = frozenset()
EITHER = frozenset({"<either>"})
REFUSED = frozenset({"<refused by the broker>"})
YEAR_2100_MS = 4_102_444_800_000
ENVELOPE_NUMBERS = ("schema_version", "event_time_ms", "seq", "pid", "generation")
ENVELOPE_STRINGS = ("event_id", "agent_id", "group_id", "member_id", "group_instance_id", "client_id", "host",
                    "assignor")
NULLABLE = ("member_id", "group_instance_id")
ENUMS = {name: node["enum"] for name, node in contract.schema()["properties"].items() if "enum" in node}
NAMES = ("group_id", "client_id", "host", "agent_id", "group_instance_id", "member_id")
JACKSON_MAX_DEPTH = 1000  # Jackson's StreamReadConstraints default nesting limit (Spark 4.2's reader)


@dataclass
class Case:
    """One record and what validation must do with it; ``make(event_id)`` builds (key, value,
    Kafka timestamp ms) around a fresh event id (and keeps the event it made in ``made``)."""

    what: str
    make: Callable[[str], tuple[bytes | None, bytes | None, int]]
    expect: frozenset[str]
    checks: dict[str, Any] = field(default_factory=dict)  # what a VALID case's silver row must hold
    names: tuple[str, ...] = ()  # envelope fields a VALID case's silver row holds exactly as made
    made: dict[str, Any] = field(default_factory=dict)


def _events() -> list[dict[str, Any]]:
    """Schema-valid events of every kind the small fleet makes: the base each mutation starts from."""
    return scale_out_then_crash(group="hostile-base").events


BASES = _events()
BASE_GROUP = BASES[0]["group_id"]
BASE_AGENTS = frozenset(e["agent_id"] for e in BASES)


def _encode(event: dict[str, Any]) -> bytes:
    return json.dumps(event, ensure_ascii=False).encode()


def _record(event: dict[str, Any], key: bytes | None = b"agent", timestamp: int | None = None,
            raw: Callable[[bytes], bytes] | None = None, made: dict[str, Any] | None = None
            ) -> Callable[[str], tuple[bytes | None, bytes | None, int]]:
    """The maker of a record carrying ``event``, its event id replaced by the fresh one. An event
    moved to another group gets an agent of its own (one agent is one consumer of one group:
    validation quarantines an agent seen in two groups, tested on its own by ``agent_moves``),
    and a drawn agent name is made unique the same way, so no two cases share an agent."""
    def make(event_id: str) -> tuple[bytes | None, bytes | None, int]:
        body = {**event, "event_id": event_id} if "event_id" in event else dict(event)
        agent = body.get("agent_id")
        if isinstance(agent, str) and agent not in BASE_AGENTS:
            body["agent_id"] = f"{agent}#{event_id[:8]}"
        elif body.get("group_id") != BASE_GROUP and agent in BASE_AGENTS:
            body["agent_id"] = f"agent-{event_id[:12]}"
        if made is not None:
            made.update(body)
        value = _encode(body)
        return key, raw(value) if raw else value, timestamp if timestamp is not None else _stamp(event)
    return make


def _stamp(event: dict[str, Any]) -> int:
    """The Kafka timestamp of a record: the event's own time when plausible, else the base's."""
    t = event.get("event_time_ms")
    return t if isinstance(t, int) and 1_500_000_000_000 < t < 2_000_000_000_000 else BASES[0]["event_time_ms"]


hostile_text = st.one_of(
    st.text(min_size=0, max_size=40),
    st.sampled_from(["'; DROP TABLE events; --", "\" OR 1=1 --", "<script>alert(1)</script>",
                     "<img src=x onerror=alert(1)>", "a'b\\'c\\\\", "\\", "'", "\"", "`x`", "${jndi:ldap://x/a}",
                     "{{7*7}}", "%s%n", "\x00", "\x1b[31mred", "line\nbreak\r\n", "tab\there", "\u202eevil",
                     "\u2028\u2029", "😀", "Ω≈ç√", "\ufeffbom", "   ", ""]),
    st.text(alphabet=st.characters(codec="utf-8", categories=["Cc", "Po", "Sm", "Zs"]), min_size=1, max_size=30),
)


@st.composite
def _base(draw: st.DrawFn) -> dict[str, Any]:
    return json.loads(json.dumps(draw(st.sampled_from(BASES))))  # a deep copy


@st.composite
def hostile_names(draw: st.DrawFn) -> Case:
    """A valid event whose names (group, client id, host, agent, instance, member) carry quotes,
    markup, SQL and control characters: it must land in silver with each name exactly as sent."""
    event = draw(_base())
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    for name in names:
        event[name] = draw(hostile_text)
    made: dict[str, Any] = {}
    return Case(f"names {names}", _record(event, made=made), VALID, names=tuple(names), made=made)


@st.composite
def missing_or_null(draw: st.DrawFn) -> Case:
    event = draw(_base())
    name = draw(st.sampled_from(sorted(k for k in event if k != "event_id")))
    if draw(st.booleans()):
        del event[name]
        how = "missing"
    else:
        event[name] = None
        how = "null"
    expect = VALID if name in NULLABLE else frozenset({f"missing_{name}"})
    return Case(f"{how} {name}", _record(event), expect)


@st.composite
def wrong_type(draw: st.DrawFn) -> Case:
    """A number field given text, a list, an object, a boolean or a fraction: unparsable as
    the contract's type, so malformed_json. A string field given a number or an object: Spark
    keeps its JSON text, so either outcome is the contract's."""
    event = draw(_base())
    junk = st.one_of(hostile_text, st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5),
                                                                                   st.integers(), max_size=2),
                     st.booleans(), st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)))
    if draw(st.booleans()):
        name = draw(st.sampled_from(ENVELOPE_NUMBERS))
        event[name] = draw(junk.filter(lambda v: not isinstance(v, str) or not v.strip().lstrip("-").isdigit()))
        return Case(f"{name} = {event[name]!r:.60}", _record(event), frozenset({"malformed_json"}))
    name = draw(st.sampled_from(ENVELOPE_STRINGS))
    event[name] = draw(st.one_of(st.integers(), st.lists(st.integers(), max_size=3), st.booleans()))
    return Case(f"{name} = {event[name]!r:.60}", _record(event), EITHER)


@st.composite
def bad_enum(draw: st.DrawFn) -> Case:
    event = draw(_base())
    name = draw(st.sampled_from(sorted(ENUMS)))
    event[name] = draw(hostile_text.filter(lambda v: v not in ENUMS[name]))
    return Case(f"{name} = {event[name]!r:.60}", _record(event), frozenset({f"unknown_{name}"}))


@st.composite
def bad_body(draw: st.DrawFn) -> Case:
    """A body missing a required field, with a field of the wrong type, or not an object at all."""
    event = draw(_base())
    body = event["body"]
    how = draw(st.sampled_from(("drop", "retype", "replace")))
    if how == "replace":
        event["body"] = draw(st.one_of(st.none(), hostile_text, st.lists(st.integers(), max_size=3), st.integers()))
        expect = frozenset({"missing_body"}) if event["body"] is None else frozenset({"incomplete_body"})
        return Case(f"body = {event['body']!r:.60}", _record(event), expect)
    definition = contract.schema()["$defs"][contract.BODY_DEFINITIONS[event["kind"]]]
    required = [f for f in definition.get("required", []) if f in body
                and "null" not in str(definition["properties"][f].get("type", ""))]
    if how == "retype":  # a string field keeps any JSON as its text (see wrong_type): retype the others
        required = [f for f in required if definition["properties"][f].get("type") != "string"
                    and "enum" not in definition["properties"][f]]
    name = draw(st.sampled_from(required))
    if how == "drop":
        del body[name]
    else:
        spec = definition["properties"][name]
        body[name] = {"junk": 1} if spec.get("type") in ("integer", "number", "boolean") else "junk"
    return Case(f"body.{name} {how}", _record(event), frozenset({"incomplete_body"}))


@st.composite
def bad_offsets(draw: st.DrawFn) -> Case:
    event = draw(_base().filter(lambda e: e["kind"] in ("commit", "first_fetch")))
    offset = draw(st.integers(min_value=-10**12, max_value=-1).filter(lambda o: o != contract.OFFSET_UNKNOWN))
    if event["kind"] == "commit":
        event["body"]["offsets"][0]["offset"] = offset
    else:
        event["body"]["offset"] = offset
    return Case(f"{event['kind']} offset {offset}", _record(event), frozenset({"negative_offset"}))


@st.composite
def huge_strings(draw: st.DrawFn) -> Case:
    """A name or body string of 50k-200k characters (records stay under Kafka's 1 MB): valid."""
    event = draw(_base())
    piece = draw(st.text(min_size=1, max_size=8))
    size = draw(st.integers(min_value=50_000, max_value=200_000))
    text = (piece * (size // len(piece) + 1))[:size]
    if len(json.dumps(text, ensure_ascii=False).encode()) > 900_000:  # as sent: a control character
        text = text[: 900_000 // 6]                                       # is 6 bytes (\u0000) there
    name = draw(st.sampled_from(("group_id", "client_id", "host", "assignor_body")))
    if name == "assignor_body":
        event["body"]["zz_note"] = text  # an unknown body field: ignored by v1's reader, kept in body
        return Case(f"body string of {len(text):,} chars", _record(event), VALID)
    event[name] = text
    made: dict[str, Any] = {}
    return Case(f"{name} of {len(text):,} chars", _record(event, made=made), VALID, names=(name,), made=made)


@st.composite
def deep_nesting(draw: st.DrawFn) -> Case:
    """An unknown field nested ``depth`` arrays deep in the envelope or the body: ignored while
    Jackson reads it (up to its nesting limit), malformed_json beyond."""
    event = draw(_base())
    depth = draw(st.one_of(st.integers(min_value=1, max_value=900), st.integers(min_value=1100, max_value=20_000)))
    where = draw(st.sampled_from(("envelope", "body")))
    nested = "[" * depth + "]" * depth
    marker = '"zz_deep": 0'
    if where == "body":
        event["body"]["zz_deep"] = 0
    else:
        event["zz_deep"] = 0
    expect = VALID if depth <= 900 else frozenset({"malformed_json"})
    return Case(f"{where} nested {depth} deep", _record(event, raw=lambda v: v.replace(marker.encode(),
                                                                                     f'"zz_deep": {nested}'.encode())),
                expect)


@st.composite
def invalid_utf8(draw: st.DrawFn) -> Case:
    event = draw(_base())
    bad = draw(st.sampled_from([b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80",
                                b"\xf8\x88\x80\x80\x80", b"\x80", b"\xc0\xaf"]))
    name = draw(st.sampled_from(("group_id", "host", "client_id")))
    event[name] = "UTF8MARK"
    return Case(f"{name} with bytes {bad!r}", _record(event, raw=lambda v: v.replace(b"UTF8MARK", b"x" + bad + b"y")),
                frozenset({"malformed_json"}))


@st.composite
def empty_and_null(draw: st.DrawFn) -> Case:
    """Null or empty values and keys: a null or empty value is no event; a null or empty key is
    nothing to the pipeline (it keys by the event's agent id)."""
    how = draw(st.sampled_from(("null value", "empty value", "null key", "empty key", "whitespace value", "[]", "{}",
                                "null literal", "number")))
    event = draw(_base())
    if how in ("null key", "empty key"):
        return Case(how, _record(event, key=None if how == "null key" else b""), VALID)
    value = {"null value": None, "empty value": b"", "whitespace value": b"  \n ", "[]": b"[]", "{}": b"{}",
             "null literal": b"null", "number": b"42"}[how]
    stamp = BASES[0]["event_time_ms"]
    # no event id to read: every envelope field is missing (or the text is no JSON object)
    expect = frozenset({"malformed_json", "missing_event_id"})
    return Case(how, lambda _id: (b"agent", value, stamp), expect)


@st.composite
def odd_times(draw: st.DrawFn) -> Case:
    """Event times in 1970 or 2100 (a broken clock), or negative; Kafka timestamps in 1970
    (accepted by the broker, then far from the event's time)."""
    event = draw(_base())
    how = draw(st.sampled_from(("event 1970", "event 2100", "event negative", "kafka 1970")))
    if how == "event 1970":
        event["event_time_ms"] = draw(st.integers(min_value=0, max_value=86_400_000 * 365))
        return Case(how, _record(event), frozenset({"implausible_time"}))
    if how == "event negative":
        event["event_time_ms"] = draw(st.integers(min_value=-10**15, max_value=-1))
        return Case(how, _record(event), frozenset({"implausible_time"}))
    if how == "event 2100":
        event["event_time_ms"] = YEAR_2100_MS + draw(st.integers(min_value=0, max_value=10**9))
        return Case(how, _record(event), frozenset({"time_far_from_kafka"}))
    stamp = draw(st.integers(min_value=1, max_value=86_400_000 * 365))
    return Case(how, _record(event, timestamp=stamp), frozenset({"time_far_from_kafka"}))


@st.composite
def stamped_2100(draw: st.DrawFn) -> Case:
    """A record the producer stamps in 2100: the broker refuses it (Kafka 4 refuses a record
    stamped more than log.message.timestamp.after.max.ms, 1 h, ahead of its clock)."""
    event = draw(_base())
    return Case("kafka 2100", _record(event, timestamp=YEAR_2100_MS + draw(st.integers(0, 10**9))), REFUSED)


@st.composite
def schema_versions(draw: st.DrawFn) -> Case:
    """A later schema version with fields v1 does not know (in the envelope and the body): read
    by its v1 fields and kept whole (forward compatible). A version before 1: unknown."""
    event = draw(_base())
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        event["schema_version"] = draw(st.integers(min_value=-5, max_value=0))
        return Case(f"schema_version {event['schema_version']}", _record(event),
                    frozenset({"unknown_schema_version"}))
    event["schema_version"] = draw(st.integers(min_value=2, max_value=10**6))
    extra = draw(st.dictionaries(st.text(min_size=1, max_size=12).map(lambda k: f"zz_{k}"),
                                 st.one_of(st.integers(), hostile_text, st.lists(st.integers(), max_size=3),
                                           st.dictionaries(st.text(max_size=4), st.booleans(), max_size=2)),
                                 min_size=1, max_size=4))
    event.update(extra)
    event["body"]["zz_later_field"] = draw(hostile_text)
    return Case(f"schema_version {event['schema_version']} with {sorted(extra)}", _record(event), VALID,
                {"later_fields": extra, "later_body_field": event["body"]["zz_later_field"]})


@st.composite
def agent_moves(draw: st.DrawFn) -> Case:
    """An event of a known agent (the base fleet's, whose other events are valid cases) that
    names another group: the agent's group is the first one validation saw, so this one is
    quarantined."""
    event = draw(_base())
    event["group_id"] = BASE_GROUP + draw(st.sampled_from(("-other", "'moved", " ")))

    def make(event_id: str) -> tuple[bytes | None, bytes | None, int]:
        return b"agent", _encode({**event, "event_id": event_id}), _stamp(event)
    return Case(f"agent moved to {event['group_id']!r}", make, frozenset({"agent_in_another_group"}))


KINDS = (hostile_names, missing_or_null, wrong_type, bad_enum, bad_body, bad_offsets, huge_strings, deep_nesting,
         invalid_utf8, empty_and_null, odd_times, stamped_2100, schema_versions, agent_moves)


def draw(per_kind: int, seed: int | None = None) -> list[Case]:
    """``per_kind`` cases of each kind (so every kind is played): the same ones every run
    (derandomized) unless ``seed`` is given."""
    found: list[Case] = []
    for kind in KINDS:
        @settings(max_examples=per_kind, derandomize=seed is None, database=None, deadline=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(kind())
        def collect(case: Case) -> None:
            found.append(case)

        (with_seed(seed)(collect) if seed is not None else collect)()
    return found


def base_records() -> list[tuple[bytes, bytes, int]]:
    """The base fleet's own events, keyed as the cases are (one partition, so they come first
    when sent first): they make the base agents known in their group before any case moves one."""
    return [(b"agent", _encode(e), e["event_time_ms"]) for e in BASES]


def fresh_id() -> str:
    return uuid.uuid4().hex
