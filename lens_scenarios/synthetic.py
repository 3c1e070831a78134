"""Synthetic telemetry: schema-valid v1 events written the way a scenario reads.

Tests describe a fleet's life in a few lines and get the JSON the agent would send::

    fleet = Fleet(group="orders-app")
    m1 = fleet.member("m1").at(0).joins().assigned(P0, P1).fetches(P0, 0)
    m1.at(5_000).processes(P0, upto=99).commits(P0, 80)
    m1.at(6_000).revokes(P0, P1, callback_ms=3)

Each member keeps its partitions' offsets (position, last processed, committed) so a
revoke or progress body carries the numbers the real agent would read. ``fleet_telemetry``
scales the same builder to millions of events for the benchmark.
"""
from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from consumer_agent import contract
from consumer_agent.contract import OFFSET_UNKNOWN

BASE_TIME_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: times in builders are offsets from it
TOPIC = "orders"


def tp(partition: int, topic: str = TOPIC) -> tuple[str, int]:
    return (topic, partition)


P0, P1, P2, P3 = tp(0), tp(1), tp(2), tp(3)


@dataclass
class _Offsets:
    position: int = OFFSET_UNKNOWN
    last_processed: int = OFFSET_UNKNOWN
    committed: int = OFFSET_UNKNOWN

    def state(self, topic: str, partition: int) -> dict[str, Any]:
        return {"topic": topic, "partition": partition, "position": self.position,
                "last_processed_offset": self.last_processed, "committed_offset": self.committed}


@dataclass
class Member:
    """One agent (one consumer object) in a fleet; every method appends one event and returns self."""

    fleet: "Fleet"
    agent_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    group_protocol: str = "classic"
    rebalance_protocol: str = "eager"
    assignor: str = "range"
    commit_on_revoke: bool = False
    now_ms: int = 0
    seq: int = 0
    generation: int = -1
    member_id: str | None = None
    owned: dict[tuple[str, int], _Offsets] = field(default_factory=dict)
    state_name: str = "unsubscribed"

    def at(self, t_ms: int) -> "Member":
        """Events that follow happen ``t_ms`` after the fleet's base time."""
        self.now_ms = t_ms
        return self

    def _emit(self, kind: str, body: dict[str, Any]) -> "Member":
        identity = {"agent_id": self.agent_id, "group_id": self.fleet.group, "group_instance_id": self.group_instance_id,
                    "client_id": self.client_id, "host": self.host, "pid": 1000 + len(self.agent_id),
                    "group_protocol": self.group_protocol, "rebalance_protocol": self.rebalance_protocol,
                    "assignor": self.assignor}
        self.fleet.events.append(contract.event(
            kind, body, event_id=uuid.UUID(int=self.fleet.rng.getrandbits(128)).hex,
            event_time_ms=self.fleet.base_ms + self.now_ms, seq=self.seq, member_id=self.member_id,
            generation=self.generation, identity=identity))
        self.seq += 1
        return self

    def state(self, to_state: str, reason: str) -> "Member":
        previous, self.state_name = self.state_name, to_state
        return self._emit("state_transition", {"from_state": previous, "to_state": to_state, "reason": reason,
                                               "allowed": True})

    def joins(self, reason: str = "start", topics: tuple[str, ...] = (TOPIC,)) -> "Member":
        """member_config then the move to joining, as at subscribe()."""
        self._emit("member_config", {
            "reason": reason, "topics": list(topics), "pattern": None, "session_timeout_ms": 45000,
            "heartbeat_interval_ms": 3000, "max_poll_interval_ms": 300000, "enable_auto_commit": False,
            "auto_commit_interval_ms": 5000, "enable_auto_offset_store": False,
            "commit_on_revoke": self.commit_on_revoke, "config": {"group.id": self.fleet.group},
            "agent_version": "0.1.0", "client_version": "2.16.1", "librdkafka_version": "2.16.1"})
        return self.state("joining", "subscribe") if reason == "start" else self

    def _change(self, kind: str, parts: tuple[tuple[str, int], ...], callback_ms: float,
                commit_on_revoke: dict[str, Any] | None = None) -> "Member":
        return self._emit(kind, {
            "partitions": [self.owned.get(p, _Offsets()).state(*p) for p in parts],
            "incremental": self.rebalance_protocol == "cooperative", "callback_ms": callback_ms,
            "assignment_size": len(self.owned), "commit_on_revoke": commit_on_revoke})

    def assigned(self, *parts: tuple[str, int], generation: int | None = None, callback_ms: float = 0.5) -> "Member":
        self.generation = self.generation + 1 if generation is None else generation
        self.member_id = self.member_id or f"{self.agent_id}-member"
        for p in parts:
            self.owned[p] = _Offsets()
        self.state_name = "stable"
        return self._change("partitions_assigned", parts, callback_ms)

    def fetches(self, part: tuple[str, int], offset: int, since_assign_ms: float = 5.0,
                produced_ms: int | None = None, window_ms: float = 0.0) -> "Member":
        """The first record after the assignment; ``produced_ms`` (its Kafka timestamp) is an
        offset from the base time; ``window_ms`` > 0: found at a progress tick, not seen."""
        self.owned[part].position = offset
        timestamp = None if produced_ms is None or window_ms else self.fleet.base_ms + produced_ms
        return self._emit("first_fetch", {"topic": part[0], "partition": part[1], "offset": offset,
                                          "since_assign_ms": since_assign_ms, "timestamp_ms": timestamp,
                                          "seen": not window_ms, "window_ms": window_ms})

    def processes(self, part: tuple[str, int], upto: int, interval_ms: float = 1000.0,
                  lag: int | None = 0) -> "Member":
        """A progress event: the member processed records up to offset ``upto``."""
        off = self.owned[part]
        start = off.last_processed + 1 if off.last_processed >= 0 else max(off.position, 0)
        off.last_processed, off.position = upto, upto + 1
        return self._emit("progress", {"interval_ms": interval_ms, "truncated": 0, "partitions": [{
            **off.state(*part), "processed": max(0, upto + 1 - start), "lag": lag}]})

    def commits(self, part: tuple[str, int], offset: int, in_revoke: bool = False, mode: str = "manual",
                error: str | None = None) -> "Member":
        """A commit of ``offset`` (the next offset to read)."""
        if error is None and part in self.owned:
            self.owned[part].committed = offset
        return self._emit("commit", {"mode": mode, "sync": mode == "manual", "in_revoke": in_revoke,
                                     "offsets": [{"topic": part[0], "partition": part[1], "offset": offset,
                                                  "error": None}],
                                     "error": error, "duration_ms": 1.0 if mode == "manual" else None})

    def revokes(self, *parts: tuple[str, int], callback_ms: float = 1.0,
                committed_in_callback: bool = False) -> "Member":
        cor = None
        if committed_in_callback:
            for p in parts:
                self.owned[p].committed = self.owned[p].last_processed + 1
            cor = {"waited_ms": 0.0, "timed_out": False, "committed": True, "error": None}
        self._change("partitions_revoked", parts, callback_ms, cor)
        for p in parts:
            self.owned.pop(p, None)
        return self

    def loses(self, *parts: tuple[str, int]) -> "Member":
        self._change("partitions_lost", parts, 0.5)
        for p in parts:
            self.owned.pop(p, None)
        return self

    def leaves(self) -> "Member":
        return self.state("leaving", "close")

    def exceeds_poll_interval(self) -> "Member":
        self._emit("client_error", {"code": -147, "name": "_MAX_POLL_EXCEEDED",
                                    "message": "Application maximum poll interval exceeded", "fatal": False})
        return self.state("stale", "max.poll.interval.ms exceeded")

    def changes_subscription(self, topics: tuple[str, ...]) -> "Member":
        return self.joins(reason="subscription_changed", topics=topics)

    def requests_rebalance(self, accepted: bool = True) -> "Member":
        return self._emit("rebalance_requested", {"reason": "operator", "mechanism": "unsubscribe+subscribe",
                                                  "accepted": accepted})


@dataclass
class Fleet:
    """The telemetry of one consumer group, in emission order."""

    group: str = "orders-app"
    base_ms: int = BASE_TIME_MS
    seed: int = 7
    events: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def member(self, name: str, host: str | None = None, client_id: str | None = None,
               group_instance_id: str | None = None, **settings: Any) -> Member:
        # agent ids are unique across groups, as the agent's are (a UUID per process): 32 random
        # bits alone collided once in the benchmark's 90,000 processes
        agent_id = f"{self.group}/{name}-{self.rng.getrandbits(32):08x}"
        return Member(self, agent_id=agent_id, client_id=client_id or name, host=host or f"host-{name}",
                      group_instance_id=group_instance_id, **settings)

    def json_values(self) -> list[str]:
        return [json.dumps(e, separators=(",", ":")) for e in self.events]

    def keyed(self) -> list[tuple[str, str, int]]:
        """(key, value, timestamp ms) as the agent produces them: key = agent_id, sent at the event's time."""
        return [(e["agent_id"], v, e["event_time_ms"]) for e, v in zip(self.events, self.json_values())]


def fleet_telemetry(groups: int, members: int, partitions: int, rounds: int, seed: int = 1,
                    records_per_round: int = 1000, prefix: str = "bench",
                    from_round: int = 0, restart_every: int = 0) -> Iterator[tuple[str, str, int]]:
    """(key, value, timestamp ms) triples for ``groups`` groups that each go through ``rounds`` graceful rebalances.

    Each round every member processes and commits part of its partitions, then all
    revoke (eager) and the partitions rotate one member along; one member in ten skips
    its last commit, so handoffs carry duplicates. Deterministic for a given seed.
    ``from_round`` > 0 emits only the later rounds: the same groups' telemetry going on
    (the earlier rounds are generated, so offsets and sequence numbers continue).
    ``restart_every`` > 0: after every that many rounds one member (in turn) leaves after its
    revoke and comes back as a new process (same client id and host) before the next
    assignment: membership churn for the what-if to replay.
    """
    for g in range(groups):
        fleet = Fleet(group=f"{prefix}-{g}", seed=seed * 100_003 + g)
        parts = [tp(p) for p in range(partitions)]
        mems = [fleet.member(f"m{i}") for i in range(members)]
        t = 0
        for m in mems:
            m.at(t).joins()
        offsets = {p: 0 for p in parts}
        start = 0
        for r in range(rounds):
            if r == from_round and from_round > 0:  # a group's first rounds include its members' joins
                start = len(fleet.events)
            t += 1000
            for i, m in enumerate(mems):
                mine = tuple(p for k, p in enumerate(parts) if (k + r) % members == i)
                m.at(t).assigned(*mine)
                for p in mine:
                    m.fetches(p, offsets[p])
            t += 30_000
            for i, m in enumerate(mems):
                for p in list(m.owned):
                    upto = offsets[p] + records_per_round - 1
                    m.at(t).processes(p, upto=upto, interval_ms=30_000)
                    skip = fleet.rng.random() < 0.1
                    offsets[p] = upto + 1 - (fleet.rng.randrange(1, records_per_round // 2) if skip else 0)
                    m.commits(p, offsets[p])
            t += 500
            for m in mems:
                m.at(t).revokes(*list(m.owned), callback_ms=2.0)
            if restart_every and (r + 1) % restart_every == 0:
                i = (r // restart_every) % members
                mems[i].at(t + 50).leaves()
                mems[i] = fleet.member(mems[i].client_id, host=mems[i].host, client_id=mems[i].client_id)
                mems[i].at(t + 400).joins()
        yield from fleet.keyed()[start:]
        fleet.events.clear()
