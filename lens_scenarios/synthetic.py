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

import heapq
import json
import random
import uuid
from collections.abc import Callable, Iterator, Mapping
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
    # what its member_config reports beyond the defaults: settings it set, client version, regex subscription
    config: dict[str, str] = field(default_factory=dict)
    librdkafka_version: str = "2.16.1"
    pattern: str | None = None
    callback_calls: tuple[str, ...] = ()  # the assignment calls its rebalance callbacks make (each partitions_* event)

    def at(self, t_ms: int) -> "Member":
        """Events that follow happen ``t_ms`` after the fleet's base time."""
        self.now_ms = t_ms
        return self

    def _emit(self, kind: str, body: dict[str, Any]) -> "Member":
        identity = {"agent_id": self.agent_id, "group_id": self.fleet.group,
                    "group_instance_id": self.group_instance_id,
                    "client_id": self.client_id, "host": self.host, "pid": 1000 + len(self.agent_id),
                    "group_protocol": self.group_protocol, "rebalance_protocol": self.rebalance_protocol,
                    "assignor": self.assignor}
        self.fleet.events.append({**contract.event(
            kind, body, event_id=uuid.UUID(int=self.fleet.rng.getrandbits(128)).hex,
            event_time_ms=self.fleet.base_ms + self.now_ms, seq=self.seq, member_id=self.member_id,
            generation=self.generation, identity=identity), "cluster_id": self.fleet.cluster})
        self.seq += 1
        return self

    def state(self, to_state: str, reason: str) -> "Member":
        previous, self.state_name = self.state_name, to_state
        return self._emit("state_transition", {"from_state": previous, "to_state": to_state, "reason": reason,
                                               "allowed": True})

    def joins(self, reason: str = "start", topics: tuple[str, ...] = (TOPIC,)) -> "Member":
        """member_config then the move to joining, as at subscribe()."""
        self._emit("member_config", {
            "reason": reason, "topics": list(topics), "pattern": self.pattern, "session_timeout_ms": 45000,
            "heartbeat_interval_ms": 3000, "max_poll_interval_ms": 300000, "enable_auto_commit": False,
            "auto_commit_interval_ms": 5000, "enable_auto_offset_store": False,
            "commit_on_revoke": self.commit_on_revoke, "config": {"group.id": self.fleet.group, **self.config},
            "agent_version": "0.1.0", "client_version": self.librdkafka_version,
            "librdkafka_version": self.librdkafka_version})
        return self.state("joining", "subscribe") if reason == "start" else self

    def _change(self, kind: str, parts: tuple[tuple[str, int], ...], callback_ms: float,
                commit_on_revoke: dict[str, Any] | None = None) -> "Member":
        calls = {"callback_calls": list(self.callback_calls)} if self.callback_calls else {}  # else as older agents
        return self._emit(kind, {
            "partitions": [self.owned.get(p, _Offsets()).state(*p) for p in parts],
            "incremental": self.rebalance_protocol == "cooperative", "callback_ms": callback_ms,
            "assignment_size": len(self.owned), "commit_on_revoke": commit_on_revoke, **calls})

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
                  lag: int | None = 0, cause: str | None = None, next_due_ms: float | None = None) -> "Member":
        """A progress event: the member processed records up to offset ``upto``."""
        return self.processes_many({part: upto}, interval_ms, {part: lag}, cause, next_due_ms)

    def processes_many(self, uptos: Mapping[tuple[str, int], int], interval_ms: float = 1000.0,
                       lags: Mapping[tuple[str, int], int | None] | None = None, cause: str | None = None,
                       next_due_ms: float | None = None) -> "Member":
        """One progress event for several partitions, as the agent reports all it owns at each
        tick: the member processed each partition's records up to ``uptos[partition]``; ``cause`` and
        ``next_due_ms`` as today's agents send them (None: left out, as older agents did)."""
        rows = []
        for part, upto in uptos.items():
            off = self.owned[part]
            start = off.last_processed + 1 if off.last_processed >= 0 else max(off.position, 0)
            off.last_processed, off.position = upto, upto + 1
            rows.append({**off.state(*part), "processed": max(0, upto + 1 - start),
                         "lag": (lags or {}).get(part, 0)})
        body = {"interval_ms": interval_ms, "truncated": 0, "partitions": rows}
        body.update({k: v for k, v in (("cause", cause), ("next_due_ms", next_due_ms)) if v is not None})
        return self._emit("progress", body)

    def commits(self, part: tuple[str, int], offset: int, in_revoke: bool = False, mode: str = "manual",
                error: str | None = None) -> "Member":
        """A commit of ``offset`` (the next offset to read)."""
        return self.commits_many({part: offset}, in_revoke, mode, error)

    def commits_many(self, offsets: Mapping[tuple[str, int], int], in_revoke: bool = False, mode: str = "manual",
                     error: str | None = None) -> "Member":
        """One commit of several partitions' offsets (each the next offset to read)."""
        if error is None:
            for part, offset in offsets.items():
                if part in self.owned:
                    self.owned[part].committed = offset
        return self._emit("commit", {"mode": mode, "sync": mode == "manual", "in_revoke": in_revoke,
                                     "offsets": [{"topic": part[0], "partition": part[1], "offset": offset,
                                                  "error": None} for part, offset in offsets.items()],
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

    def reports_error(self, name: str, code: int, message: str, fatal: bool = True) -> "Member":
        """A client error handed out by poll (a fatal one ends the member's group work)."""
        return self._emit("client_error", {"code": code, "name": name, "message": message, "fatal": fatal})

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
    cluster: str = "synthetic-cluster"  # the cluster_id its events carry, as the agent's emitter adds it

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


class _LongLivedGroup:
    """One long-lived group as a small event-driven simulation: a heap of timed actions
    (member ticks, restart steps) run in time order, an hour at a time (``run_until``), so
    offsets, sequence numbers and the random stream continue from one hour to the next.

    Partition ``p`` receives ``records_per_s`` records a second from time 0 (its log end at
    time t is ``records_per_s * t``), the group's members use the cooperative-sticky assignor,
    and each member's home partitions are ``p % members == slot``. With ``eager_every_min`` > 0
    they use the eager protocol instead: every rebalance (one each ``eager_every_min`` minutes,
    and a restart's leave and join) revokes every partition and deals each to another member.
    """

    JOIN_MS = 3_000      # from a join (or a leave) to the rebalance's assignment
    DOWN_MS = 20_000     # a restarted member's new process joins this long after the old one left

    def __init__(self, group: str, members: int, partitions: int, seed: int, tick_ms: int, records_per_s: int,
                 restart_every_h: int, deploy_every_h: int, eager_every_min: int = 0) -> None:
        self.fleet = Fleet(group=group, seed=seed)
        self.rng = self.fleet.rng
        self.tick_ms, self.rate = tick_ms, records_per_s
        self.restart_every_h, self.deploy_every_h = restart_every_h, deploy_every_h
        self.eager_every_min = eager_every_min
        self.home = [tuple(tp(p) for p in range(slot, partitions, members)) for slot in range(members)]
        self.committed = {tp(p): 0 for p in range(partitions)}
        self.owner: dict[tuple[str, int], int | None] = dict.fromkeys(self.committed)
        self.slots: list[Member | None] = [None] * members
        self.generation = -1
        self._queue: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._n = 0
        for slot in range(members):
            self._at(0, self._join, slot)
            self._at(tick_ms + tick_ms * slot // members, self._tick, slot)  # ticks spread over the interval
        self._at(self.JOIN_MS, self._assign_homes, tuple(range(members)))

    def _at(self, t: int, action: Callable[..., None], *args: Any) -> None:
        heapq.heappush(self._queue, (t, self._n, action, args))
        self._n += 1

    def run_until(self, end_ms: int, hour: int) -> None:
        """Run the actions before ``end_ms``, after scheduling hour ``hour``'s restarts."""
        start = end_ms - 3_600_000
        if self.restart_every_h and hour % self.restart_every_h == 0:
            self._at(start + 20 * 60_000, self._leave, (hour // self.restart_every_h) % len(self.slots))
        if self.deploy_every_h and hour % self.deploy_every_h == self.deploy_every_h - 1:
            self._at(start + 30 * 60_000, self._rolling_restart, 0)  # a deploy: each member in turn
        if self.eager_every_min:
            for minute in range(self.eager_every_min, 61, self.eager_every_min):
                self._at(start + minute * 60_000, self._eager_round)
        while self._queue and self._queue[0][0] < end_ms:
            t, _, action, args = heapq.heappop(self._queue)
            action(t, *args)

    def _log_end(self, t: int) -> int:
        return self.rate * t // 1000

    def _join(self, t: int, slot: int) -> None:
        name = f"m{slot}"
        if self.eager_every_min:
            self.slots[slot] = self.fleet.member(name, rebalance_protocol="eager", assignor="roundrobin")
        else:
            self.slots[slot] = self.fleet.member(name, rebalance_protocol="cooperative", assignor="cooperative-sticky")
        self.slots[slot].at(t).joins()

    def _give(self, t: int, slot: int, parts: tuple[tuple[str, int], ...]) -> None:
        """``slot``'s member is assigned ``parts`` (incrementally) and fetches each from the committed offset."""
        member = self.slots[slot]
        member.at(t).assigned(*parts, generation=self.generation)
        for p in parts:
            self.owner[p] = slot
            offset = self.committed[p]
            produced = -(-offset * 1000 // self.rate)  # when the record at ``offset`` was produced
            fetched = max(t + self.rng.randrange(5, 50), produced + 1)  # an idle partition waits for it
            member.at(fetched).fetches(p, offset, since_assign_ms=float(fetched - t), produced_ms=produced)

    def _assign_homes(self, t: int, slots: tuple[int, ...]) -> None:
        self.generation += 1
        for slot in slots:
            self._give(t, slot, self.home[slot])

    def _catch_up(self, t: int, member: Member, parts: tuple[tuple[str, int], ...]) -> None:
        """Records processed since the member's last tick (no event says so): they are the
        duplicates of a revoke, processed again from the last commit by the next owner."""
        upto = self._log_end(t) - 1
        for p in parts:
            off = member.owned[p]
            if off.position < 0:  # not fetched yet: nothing processed
                continue
            off.last_processed, off.position = max(off.last_processed, upto), max(off.position, upto + 1)

    def _revoke(self, t: int, slot: int, parts: tuple[tuple[str, int], ...]) -> None:
        member = self.slots[slot]
        self._catch_up(t, member, parts)
        member.at(t).revokes(*parts, callback_ms=round(self.rng.uniform(0.5, 5.0), 2))
        for p in parts:
            self.owner[p] = None

    def _tick(self, t: int, slot: int) -> None:
        """Every ``tick_ms``: one progress event over all the member's partitions, then one
        commit of all of them (a member that is down skips its tick)."""
        self._at(t + self.tick_ms, self._tick, slot)
        member = self.slots[slot]
        if member is None or not member.owned:
            return
        end = self._log_end(t)
        uptos, lags = {}, {}
        for p, off in member.owned.items():
            if off.position < 0:  # assigned, not fetched yet
                continue
            backlog = self.rng.randrange(0, self.rate + 1)
            uptos[p] = max(end - 1 - backlog, off.last_processed, off.position - 1)
            lags[p] = end - uptos[p] - 1
        if uptos:
            member.at(t).processes_many(uptos, interval_ms=float(self.tick_ms), lags=lags)
            offsets = {p: upto + 1 for p, upto in uptos.items()}
            member.at(t + self.rng.randrange(1, 20)).commits_many(offsets)
            self.committed.update(offsets)

    def _leave(self, t: int, slot: int, then: Callable[..., None] | None = None, *args: Any) -> None:
        """A restart of ``slot``'s member: it revokes all it owns and leaves; the group gives its
        partitions to the others; its new process joins and the group hands its home
        partitions back (two cooperative rebalances, each a handoff per partition). ``then``
        runs when it is done (a rolling restart's next step)."""
        member = self.slots[slot]
        if member is None:  # down already (restarts overlap): try again later
            if then is not None:
                self._at(t + 30_000, then, *args)
            return
        owned = tuple(member.owned)
        self._revoke(t, slot, owned)
        member.at(t).leaves()
        self.slots[slot] = None
        if self.eager_every_min:  # the leave and the join are each an eager round
            self._eager_round(t)
            self._at(t + self.DOWN_MS, self._join, slot)
            self._at(t + self.DOWN_MS, self._eager_round)
            if then is not None:
                self._at(t + self.DOWN_MS + 30_000, then, *args)
            return
        self._at(t + self.JOIN_MS, self._spread, owned)
        self._at(t + self.DOWN_MS, self._join, slot)
        self._at(t + self.DOWN_MS + self.JOIN_MS, self._take_back, slot, then, args)

    def _spread(self, t: int, parts: tuple[tuple[str, int], ...]) -> None:
        self.generation += 1
        alive = [s for s, m in enumerate(self.slots) if m is not None]
        share: dict[int, list[tuple[str, int]]] = {}
        for k, p in enumerate(parts):
            share.setdefault(alive[(k + self.generation) % len(alive)], []).append(p)
        for slot, mine in share.items():
            self._give(t, slot, tuple(mine))

    def _take_back(self, t: int, slot: int, then: Callable[..., None] | None, args: tuple[Any, ...]) -> None:
        """The first cooperative rebalance after the join: the owners revoke the new member's
        home partitions; the second, a second later, assigns them to it."""
        self.generation += 1
        by_owner: dict[int, list[tuple[str, int]]] = {}
        for p in self.home[slot]:
            if self.owner[p] is not None:
                by_owner.setdefault(self.owner[p], []).append(p)
        for owner, parts in by_owner.items():
            self._revoke(t, owner, tuple(parts))
        self._at(t + 1_000, self._assign_homes, (slot,))
        if then is not None:
            self._at(t + 30_000, then, *args)

    def _eager_round(self, t: int) -> None:
        """An eager rebalance: every member revokes all it owns; the assignment follows."""
        for slot, member in enumerate(self.slots):
            if member is not None and member.owned:
                self._revoke(t, slot, tuple(member.owned))
        self._at(t + self.JOIN_MS, self._deal)

    def _deal(self, t: int) -> None:
        """Assign every unowned partition round-robin over the live members, shifted by the
        generation, so that with the same members each partition moves to the next member (two
        rounds before one assignment deal only once: the second finds nothing unowned)."""
        self.generation += 1
        alive = [s for s, m in enumerate(self.slots) if m is not None]
        share: dict[int, list[tuple[str, int]]] = {}
        for p, owner in self.owner.items():
            if owner is None and alive:
                share.setdefault(alive[(p[1] + self.generation) % len(alive)], []).append(p)
        for slot, mine in share.items():
            self._give(t, slot, tuple(mine))

    def _rolling_restart(self, t: int, slot: int) -> None:
        if slot < len(self.slots):
            self._leave(t, slot, self._rolling_restart, slot + 1)


def long_lived_telemetry(groups: int, members: int, partitions: int, hours: int, seed: int = 1,
                         prefix: str = "long", from_hour: int = 0, tick_s: int = 30, records_per_s: int = 20,
                         restart_every_h: int = 2, deploy_every_h: int = 24,
                         eager_every_min: int = 0) -> Iterator[tuple[str, str, int]]:
    """(key, value, timestamp ms) triples of ``groups`` large long-lived groups over ``hours`` hours.

    Each group has ``members`` members owning ``partitions`` partitions steadily
    (cooperative-sticky assignment: a rebalance moves only the partitions that change
    owner). Every ``tick_s`` seconds each member emits one progress event carrying all its
    partitions, then one commit event with all their offsets, as the agent does; each partition
    receives ``records_per_s`` records a second and the owner keeps up with up to a second of lag.
    Churn: in every ``restart_every_h``-th hour (hours 0, 2, 4, ... by default; at minute 20) one
    member, in turn, restarts, and at half past the last hour of every ``deploy_every_h`` hours
    (23:30 each day by default) a deploy restarts every member in turn; a restart revokes the member's
    partitions and leaves (the records it processed since its last commit are processed again),
    the others take its partitions, and 20 s later its new process joins and gets them back: two
    handoffs per partition moved, in two rebalance episodes.

    Events: ``2 * 3600 / tick_s`` a member an hour (240 at 30 s) plus the restarts'; 2 groups x
    20 members: 9,600 an hour plus about 100 per restart. Deterministic for a given seed;
    ``from_hour`` > 0 emits only hours ``from_hour``..``hours``-1 of the same groups (the earlier
    hours are simulated, so offsets and sequence numbers continue): "one more hour" of a
    history produced before. The groups' events come hour by hour.

    ``eager_every_min`` > 0: the members use the eager protocol, and every ``eager_every_min``
    minutes (and at a restart's leave and join) a rebalance revokes every partition and assigns
    each to another member: every partition has new handoffs every hour.
    """
    sims = [_LongLivedGroup(f"{prefix}-{g}", members, partitions, seed * 100_003 + g, tick_s * 1000, records_per_s,
                            restart_every_h, deploy_every_h, eager_every_min) for g in range(groups)]
    for hour in range(hours):
        for sim in sims:
            sim.run_until((hour + 1) * 3_600_000, hour)
            if hour >= from_hour:
                yield from sim.fleet.keyed()
            sim.fleet.events.clear()
