"""The telemetry contract (schema v1) in one module: everything the agent, the pipelines,
the synthetic builder and the docs know about an event comes from here.

``telemetry-v1.schema.json`` is the contract, with the agent spec beside it (``agent-spec-v1.json``,
``agent_spec``: the member states, options, secrets and constants both agents share, of which
this module passes on what the pipelines read); this module loads the schema once and derives what
the code needs from it (the version, the kinds, which body each kind carries), gives the
bodies their Python face (one dataclass per ``$defs`` entry; a test keeps their fields
equal to the schema's properties) and builds an event's envelope (``event``). Events are
built on the application thread as plain dicts and serialised on the emitter thread.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from consumer_agent.agent_spec import constant, spec

OFFSET_UNKNOWN: int = constant("offset_unknown")  # librdkafka's OFFSET_INVALID: an offset the member does not know


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package (parsed once; do not mutate)."""
    return json.loads(resources.files("consumer_agent").joinpath("telemetry-v1.schema.json").read_text())


SCHEMA_VERSION: int = int(schema()["properties"]["schema_version"]["const"])
KINDS: tuple[str, ...] = tuple(schema()["properties"]["kind"]["enum"])
# The envelope's protocols: the one declaration the pipelines, the simulator and the CLI use.
GROUP_PROTOCOLS: tuple[str, ...] = tuple(schema()["properties"]["group_protocol"]["enum"])
REBALANCE_PROTOCOLS: tuple[str, ...] = tuple(schema()["properties"]["rebalance_protocol"]["enum"])
# kind -> the $defs entry its body follows, from the schema's if/then rules.
BODY_DEFINITIONS: dict[str, str] = {
    rule["if"]["properties"]["kind"]["const"]: rule["then"]["properties"]["body"]["$ref"].rsplit("/", 1)[-1]
    for rule in schema()["allOf"]}
# Assignment calls one partitions_* event lists at most (a host looping on assign() keeps the event small).
CALLBACK_CALLS_MAX: int = schema()["$defs"]["partitions_change"]["properties"]["callback_calls"]["maxItems"]
# Where a rebalance_timing came from (the schema's enum): the client's coordinator, or its metrics.
TIMING_SOURCES: tuple[str, ...] = tuple(
    schema()["$defs"]["partitions_change"]["properties"]["rebalance_timing"]["properties"]["source"]["enum"])
# Member states the pipelines read meaning into (the agent spec's lifecycle; member_states has the full tables).
_LIFECYCLE = spec()["lifecycle"]
LEAVING_STATES: frozenset[str] = frozenset(_LIFECYCLE["leaving_states"])
# The state_transition reasons of a member leaving on purpose (the API calls that start it); a
# KIP-848 member that stalls passes through the leaving states too, with another reason.
LEAVE_REASONS: frozenset[str] = frozenset(_LIFECYCLE["leave_reasons"])
STALE_STATE: str = _LIFECYCLE["stale_state"]  # max.poll.interval.ms exceeded, in either protocol
JOINING_STATE: str = _LIFECYCLE["joining_state"]  # (re)joining the group, in either protocol


@dataclass(frozen=True)
class Envelope:
    """Fields every event carries, whatever its kind."""

    event_id: str
    schema_version: int
    kind: str
    event_time_ms: int
    agent_id: str
    seq: int
    group_id: str
    member_id: str | None
    group_instance_id: str | None
    client_id: str
    host: str
    pid: int
    generation: int
    group_protocol: str
    rebalance_protocol: str
    assignor: str
    body: dict[str, Any]
    # Optional within v1 (not in the schema's required list): the emitter adds it once it knows it.
    cluster_id: str | None = None


# The pipelines' name for a cluster id an event did not carry (see the schema's cluster_id): one
# unknown cluster, a string so the group key (cluster_id, group_id) is never null.
CLUSTER_UNKNOWN = ""


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    position: int
    last_processed_offset: int
    committed_offset: int
    # Optional within v1: at a revoke or loss only, and only where the agent can tell (omitted when None).
    handed_out: bool | None = None


@dataclass(frozen=True)
class CommitOnRevoke:
    waited_ms: float
    timed_out: bool
    committed: bool
    error: str | None


@dataclass(frozen=True)
class RebalanceTiming:
    """The client's own timing of a rebalance (the Java agent's; librdkafka shows Python none)."""

    source: str
    rebalances: int | None
    rebalance_ms: float | None
    join_ms: float | None
    assign_ms: float | None
    sync_ms: float | None
    reconcile_ms: float | None


@dataclass(frozen=True)
class PartitionsChange:
    partitions: list[PartitionState]
    incremental: bool
    callback_ms: float
    assignment_size: int
    commit_on_revoke: CommitOnRevoke | None
    # Optional within v1 (not in the schema's required list): absent from events of older agents.
    callback_calls: list[str] = field(default_factory=list)
    rebalance_timing: RebalanceTiming | None = None  # this agent never has it: sent as null


@dataclass(frozen=True)
class MemberConfig:
    reason: str
    topics: list[str]
    pattern: str | None
    session_timeout_ms: int | None
    heartbeat_interval_ms: int | None
    max_poll_interval_ms: int
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    enable_auto_offset_store: bool
    commit_on_revoke: bool
    config: dict[str, str]
    agent_version: str
    client_version: str
    librdkafka_version: str


@dataclass(frozen=True)
class StateTransition:
    from_state: str
    to_state: str
    reason: str
    allowed: bool


@dataclass(frozen=True)
class FirstFetch:
    topic: str
    partition: int
    offset: int
    since_assign_ms: float
    timestamp_ms: int | None
    seen: bool
    window_ms: float


@dataclass(frozen=True)
class CommittedOffset:
    topic: str
    partition: int
    offset: int
    error: str | None


@dataclass(frozen=True)
class Commit:
    mode: str
    sync: bool
    in_revoke: bool
    offsets: list[CommittedOffset]
    error: str | None
    duration_ms: float | None


@dataclass(frozen=True)
class PartitionProgress:
    topic: str
    partition: int
    position: int
    last_processed_offset: int
    committed_offset: int
    processed: int
    lag: int | None


@dataclass(frozen=True)
class Progress:
    interval_ms: float
    partitions: list[PartitionProgress]
    truncated: int
    # Optional within v1 (omitted when None): why the agent ticked, and its progress interval.
    cause: str | None = None
    next_due_ms: float | None = None


@dataclass(frozen=True)
class RebalanceRequested:
    reason: str
    mechanism: str
    accepted: bool


@dataclass(frozen=True)
class ClientError:
    code: int
    name: str
    message: str
    fatal: bool


@dataclass(frozen=True)
class ClientStats:
    state: str
    stateage_ms: int
    join_state: str
    rebalance_age_ms: int
    rebalance_cnt: int
    rebalance_reason: str
    assignment_size: int


@dataclass(frozen=True)
class AgentHealth:
    dropped_total: int
    dropped_since_last: int
    buffer_size: int
    buffer_capacity: int
    emitter_errors_total: int
    last_error: str | None


Body = (MemberConfig | StateTransition | PartitionsChange | FirstFetch | Commit | Progress | RebalanceRequested
        | ClientError | ClientStats | AgentHealth)

# kind -> body class; the partitions_* kinds share one body, as in the schema.
KIND_BODIES: dict[str, type] = {
    "member_config": MemberConfig,
    "state_transition": StateTransition,
    "partitions_assigned": PartitionsChange,
    "partitions_revoked": PartitionsChange,
    "partitions_lost": PartitionsChange,
    "first_fetch": FirstFetch,
    "commit": Commit,
    "progress": Progress,
    "rebalance_requested": RebalanceRequested,
    "client_error": ClientError,
    "client_stats": ClientStats,
    "agent_health": AgentHealth,
}


def _optional_fields(node: Any) -> set[str]:
    """Every property the schema neither requires nor lets be null, anywhere under ``node``: a body field
    added within v1 that an agent sends only where it knows it (``to_dict`` leaves it out when None)."""
    found: set[str] = set()
    if isinstance(node, dict):
        if node.get("type") == "object":
            required = set(node.get("required", ()))
            found |= {name for name, prop in node.get("properties", {}).items() if name not in required
                      and isinstance(prop, dict) and "null" not in _listed(prop.get("type"))
                      and None not in prop.get("enum", ())}
        for value in node.values():
            found |= _optional_fields(value)
    elif isinstance(node, list):
        for value in node:
            found |= _optional_fields(value)
    return found


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


OMITTED_WHEN_NONE: frozenset[str] = frozenset(_optional_fields(schema()["$defs"]))
# Why a progress tick came (the schema's enum): the timer, a first record, a poll after a long gap.
PROGRESS_CAUSES: tuple[str, ...] = tuple(schema()["$defs"]["progress"]["properties"]["cause"]["enum"])


def _without_unknown(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {k: v for k, v in pairs if v is not None or k not in OMITTED_WHEN_NONE}


def to_dict(body: Body) -> dict[str, Any]:
    """The JSON-ready dict of a body (nested dataclasses become dicts; an optional field the agent
    does not know is left out, as the schema has it)."""
    return asdict(body, dict_factory=_without_unknown)


def event(kind: str, body: dict[str, Any], *, event_id: str, event_time_ms: int, seq: int, member_id: str | None,
          generation: int, identity: dict[str, Any]) -> dict[str, Any]:
    """One event as a JSON-ready dict: the envelope around ``body`` (a ``to_dict`` result).

    ``identity``: the envelope fields fixed for one agent (agent_id, group_id,
    group_instance_id, client_id, host, pid, group_protocol, rebalance_protocol, assignor).
    """
    return {"event_id": event_id, "schema_version": SCHEMA_VERSION, "kind": kind, "event_time_ms": event_time_ms,
            "seq": seq, "member_id": member_id, "generation": generation, **identity, "body": body}
