"""A group's consumer configuration as the what-if prices it, and what its members ran with.

A group's current configuration is read from its members' ``member_config`` (as
``gold/members`` keeps it). A ``Config`` names each setting a config-change kind moves
(``pipelines.recommend.kinds``): the simulator's ``Setup`` fields, the commit flag, and any
setting the simulator does not carry, which its kind's effect replays. Values a change would
set come from what the group showed (the longest restart, the longest stall), never from a
fixed table, so a recommendation's numbers are the group's own.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields, replace
from typing import Any

from pipelines import vocabulary
from pipelines.simulator.assignors import ASSIGNORS
from pipelines.simulator.cost_model import DEFAULT_HEARTBEAT_MS
from pipelines.simulator.replay import Setup, restart_pairs

DEFAULT_SESSION_TIMEOUT_MS = 45_000  # librdkafka's session.timeout.ms
SETUP_SETTINGS = tuple(f.name for f in fields(Setup))  # the settings the simulator's replay reads itself
COMMIT_ON_REVOKE = "commit_on_revoke"  # the setting the cost model reads itself


@dataclass(frozen=True)
class BrokerGroups:
    """The brokers' KIP-848 group settings: members do not report them (pipeline settings)."""

    heartbeat_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms


def kind_of(setup: Setup) -> str:
    """The cost model's protocol kind: classic eager or cooperative, or KIP-848 (``consumer``)."""
    return "consumer" if setup.assignor.startswith("consumer:") else ASSIGNORS[setup.assignor].rebalance_protocol


def heartbeats(members: list[dict[str, Any]], broker: BrokerGroups) -> dict[str, int]:
    """The heartbeat interval under each kind: the classic members' own (librdkafka's default
    when none set it), the brokers' for KIP-848."""
    classic = classic_heartbeat_ms(members)
    return {"eager": classic, "cooperative": classic, "consumer": broker.heartbeat_ms}


def classic_heartbeat_ms(members: list[dict[str, Any]]) -> int:
    """The classic members' heartbeat interval (librdkafka's default when none set it)."""
    return max((m["heartbeat_interval_ms"] or 0 for m in members if m["group_protocol"] == "classic"),
               default=0) or DEFAULT_HEARTBEAT_MS


@dataclass(frozen=True)
class Config:
    setup: Setup
    commit_on_revoke: bool
    # the settings of kinds the simulator does not read itself, in the order they were set: each
    # kind's effect replays its own (``kinds.Effect.replayed``)
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        s = self.setup
        return (f"{s.assignor}{' +static' if s.static else ''}{' +commit-on-revoke' if self.commit_on_revoke else ''}"
                f" session={s.session_timeout_ms} max.poll={s.max_poll_interval_ms}"
                + "".join(f" {name}={value}" for name, value in self.extra))

    def value(self, setting: str) -> Any:
        """The value of ``setting`` (a ``Setup`` field, ``commit_on_revoke`` or an extra setting)."""
        if setting in SETUP_SETTINGS:
            return getattr(self.setup, setting)
        return self.commit_on_revoke if setting == COMMIT_ON_REVOKE else dict(self.extra)[setting]

    def having(self, **values: Any) -> Config:
        """This configuration with ``values`` set, by setting name."""
        setup = {k: v for k, v in values.items() if k in SETUP_SETTINGS}
        extra = {k: v for k, v in values.items() if k not in SETUP_SETTINGS and k != COMMIT_ON_REVOKE}
        return replace(self, setup=replace(self.setup, **setup),
                       commit_on_revoke=values.get(COMMIT_ON_REVOKE, self.commit_on_revoke),
                       extra=tuple({**dict(self.extra), **extra}.items()))

    def same_but(self, other: Config, *settings: str) -> bool:
        """Whether ``other`` sets everything as this one does, ``settings`` aside."""
        free = set(settings)
        return (all(getattr(self.setup, s) == getattr(other.setup, s) for s in SETUP_SETTINGS if s not in free)
                and (COMMIT_ON_REVOKE in free or self.commit_on_revoke == other.commit_on_revoke)
                and {k: v for k, v in self.extra if k not in free} == {k: v for k, v in other.extra if k not in free})


def assignor_of(member: dict[str, Any]) -> str:
    """The simulator's name for a member's assignor: librdkafka uses the first strategy all members share."""
    if member["group_protocol"] == "consumer":
        remote = member["remote_assignor"] or "uniform"
        return f"consumer:{remote if f'consumer:{remote}' in ASSIGNORS else 'uniform'}"
    first = vocabulary.classic_strategy(member["assignor"]) or "range"
    return f"classic:{first}" if f"classic:{first}" in ASSIGNORS else "classic:range"


def _majority(values: list[Any]) -> Any:
    return Counter(values).most_common(1)[0][0]


def current_config(members: list[dict[str, Any]], broker: BrokerGroups) -> Config:
    """What most of the group's members ran with (the latest members count: a rollout changes it)."""
    latest = sorted(members, key=lambda m: m["joined_ms"])[-max(1, len(members) // 2):]
    timeouts = [m["session_timeout_ms"] for m in latest if m["session_timeout_ms"]]
    assignor = _majority([assignor_of(m) for m in latest])
    return Config(Setup(assignor=assignor,
                        static=_majority([m["group_instance_id"] is not None for m in latest]),
                        session_timeout_ms=(broker.session_timeout_ms if assignor.startswith("consumer:")
                                            else _majority(timeouts) if timeouts else DEFAULT_SESSION_TIMEOUT_MS),
                        max_poll_interval_ms=_majority([m["max_poll_interval_ms"] for m in latest])),
                  commit_on_revoke=_majority([bool(m["commit_on_revoke"]) for m in latest]))


def mixed_protocols(members: list[dict[str, Any]]) -> bool:
    """Members whose rebalance protocols differ (eager and cooperative in one classic group)."""
    live = [m for m in members if m["left_ms"] is None and not m["crashed"]] or members
    kinds = {ASSIGNORS[assignor_of(m)].rebalance_protocol for m in live if m["group_protocol"] == "classic"}
    return len(kinds) > 1


def longest_restart_ms(members: list[dict[str, Any]]) -> float:
    by_agent = {m["agent_id"]: m for m in members}
    return max((by_agent[j]["joined_ms"] - by_agent[a]["left_ms"] for a, j in restart_pairs(members).items()),
               default=0.0)


def longest_stall_ms(members: list[dict[str, Any]]) -> float:
    return max(((s["back_ms"] or m["last_seen_ms"]) - s["began_ms"] for m in members for s in m["stalls"]), default=0.0)
