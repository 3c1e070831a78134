"""The configurations a group could run with, and the config lines that get it there.

A group's current configuration is read from its members' ``member_config`` (as
``gold/members`` keeps it); the candidates vary the assignor and protocol, static
membership, commit-on-revoke and the two timeouts the replay depends on. Values come
from what the group showed (the longest restart, the longest stall), never from a fixed
table, so a recommendation's numbers are the group's own.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from pipelines.simulator.assignors import ASSIGNORS
from pipelines.simulator.cost_model import DEFAULT_HEARTBEAT_MS
from pipelines.simulator.replay import Setup, restart_pairs

MIN_SESSION_TIMEOUT_MS = 6_000  # the broker's group.min.session.timeout.ms default
DEFAULT_SESSION_TIMEOUT_MS = 45_000  # librdkafka's session.timeout.ms
# How much longer than the longest restart (static) or stall (max.poll.interval.ms) the new
# timeout is: room for a slower restart than any seen, without hiding a real crash for long.
HEADROOM = 2.0


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

    @property
    def label(self) -> str:
        s = self.setup
        return (f"{s.assignor}{' +static' if s.static else ''}{' +commit-on-revoke' if self.commit_on_revoke else ''}"
                f" session={s.session_timeout_ms} max.poll={s.max_poll_interval_ms}")


def assignor_of(member: dict[str, Any]) -> str:
    """The simulator's name for a member's assignor: librdkafka uses the first strategy all members share."""
    if member["group_protocol"] == "consumer":
        remote = member["remote_assignor"] or "uniform"
        return f"consumer:{remote if f'consumer:{remote}' in ASSIGNORS else 'uniform'}"
    first = (member["assignor"] or "range").split(",")[0].strip()
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


def _round_up_s(ms: float) -> int:
    return int(math.ceil(ms / 1000.0) * 1000)


def longest_restart_ms(members: list[dict[str, Any]]) -> float:
    by_agent = {m["agent_id"]: m for m in members}
    return max((by_agent[j]["joined_ms"] - by_agent[a]["left_ms"] for a, j in restart_pairs(members).items()),
               default=0.0)


def longest_stall_ms(members: list[dict[str, Any]]) -> float:
    return max(((s["back_ms"] or m["last_seen_ms"]) - s["began_ms"] for m in members for s in m["stalls"]), default=0.0)


def static_session_timeout_ms(current: Config, members: list[dict[str, Any]]) -> int:
    """A session timeout a static member's restart fits in: the current one if it does."""
    need = _round_up_s(longest_restart_ms(members) * HEADROOM)
    return max(current.setup.session_timeout_ms, need, MIN_SESSION_TIMEOUT_MS)


def crash_session_timeout_ms(current: Config, members: list[dict[str, Any]]) -> int | None:
    """A shorter session timeout when members crashed: three heartbeat intervals (the least
    that survives two lost heartbeats), never under the broker's minimum; None when the
    group had no crash or is at that already."""
    if not any(m["crashed"] for m in members) or current.setup.assignor.startswith("consumer:"):
        return None  # KIP-848's broker minimum (group.consumer.min.session.timeout.ms) is its 45 s default
    heartbeats = [m["heartbeat_interval_ms"] for m in members if m["heartbeat_interval_ms"]]
    shorter = max(MIN_SESSION_TIMEOUT_MS, 3 * max(heartbeats, default=3_000))
    return shorter if shorter < current.setup.session_timeout_ms else None


def candidates(current: Config, members: list[dict[str, Any]], broker: BrokerGroups) -> list[Config]:
    """Every combination the what-if prices, the current configuration first."""
    shorter = crash_session_timeout_ms(current, members)
    stall = longest_stall_ms(members)
    polls = {current.setup.max_poll_interval_ms}
    if stall >= current.setup.max_poll_interval_ms:
        polls.add(max(current.setup.max_poll_interval_ms, _round_up_s(stall * HEADROOM)))
    out = [current]
    for assignor in ASSIGNORS:
        for static in (False, True):
            if assignor.startswith("consumer:"):
                timeouts = {broker.session_timeout_ms}  # the brokers' group.consumer.session.timeout.ms
            else:
                base = max(current.setup.session_timeout_ms, MIN_SESSION_TIMEOUT_MS)  # crashes found as soon as now
                timeouts = {max(base, static_session_timeout_ms(current, members)) if static else base}
                if shorter is not None and not static:
                    timeouts.add(shorter)
            for timeout in sorted(timeouts):
                for commit in sorted({current.commit_on_revoke, True}):
                    for poll in sorted(polls):
                        c = Config(Setup(assignor, static, timeout, poll), commit)
                        if c != current:
                            out.append(c)
    return out


def changes(current: Config, to: Config) -> list[str]:
    """The consumer settings (``key=value``) that move a group from ``current`` to ``to``."""
    lines = []
    a, b = current.setup, to.setup
    if a.assignor != b.assignor:
        protocol, name = b.assignor.split(":")
        if protocol == "consumer":
            lines.append("group.protocol=consumer")
            lines.append(f"group.remote.assignor={name}")
            if a.assignor.startswith("classic:"):
                lines.append("# remove partition.assignment.strategy, session.timeout.ms and heartbeat.interval.ms: "
                             "the broker owns them under KIP-848")
        else:
            if a.assignor.startswith("consumer:"):
                lines.append("group.protocol=classic")
                lines.append(f"session.timeout.ms={b.session_timeout_ms}")
            lines.append(f"partition.assignment.strategy={name}")
    if b.static and not a.static:
        lines.append("group.instance.id=<a name unique in the group and stable across restarts, e.g. the pod name>")
    if a.static and not b.static:  # a plan's target can be dynamic: KIP-848 moves a leaver's partitions at once
        lines.append("# remove group.instance.id: each member joins as a new dynamic member")
    same_protocol = a.assignor.split(":")[0] == b.assignor.split(":")[0]  # across, the assignor lines say it
    if b.session_timeout_ms != a.session_timeout_ms and same_protocol:
        lines.append(f"session.timeout.ms={b.session_timeout_ms}" if b.assignor.startswith("classic:") else
                     f"group.consumer.session.timeout.ms={b.session_timeout_ms} "
                     "# a group config on the broker (kafka-configs --entity-type groups)")
    if b.max_poll_interval_ms != a.max_poll_interval_ms:
        lines.append(f"max.poll.interval.ms={b.max_poll_interval_ms}")
    if to.commit_on_revoke != current.commit_on_revoke:
        lines.append(f"lens.commit.on.revoke={str(to.commit_on_revoke).lower()}")
    return lines


def with_setup(config: Config, **changes: Any) -> Config:
    return replace(config, setup=replace(config.setup, **changes))
