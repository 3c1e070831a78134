"""Typed event bodies of telemetry schema v1, one dataclass per ``$defs`` entry.

``telemetry-v1.schema.json`` is the contract; these classes are its Python face and a
test keeps their fields equal to the schema's properties. Events are built on the
application thread as plain dicts (``to_dict``) and serialised on the emitter thread.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

SCHEMA_VERSION = 1
OFFSET_UNKNOWN = -1001  # librdkafka's OFFSET_INVALID


def load_schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package."""
    return json.loads(resources.files("consumer_agent").joinpath("telemetry-v1.schema.json").read_text())


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


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    position: int
    last_processed_offset: int
    committed_offset: int


@dataclass(frozen=True)
class CommitOnRevoke:
    waited_ms: float
    timed_out: bool
    committed: bool
    error: str | None


@dataclass(frozen=True)
class PartitionsChange:
    partitions: list[PartitionState]
    incremental: bool
    callback_ms: float
    assignment_size: int
    commit_on_revoke: CommitOnRevoke | None


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


def to_dict(body: Body) -> dict[str, Any]:
    """The JSON-ready dict of a body (nested dataclasses become dicts)."""
    return asdict(body)
