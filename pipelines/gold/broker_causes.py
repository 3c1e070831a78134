"""Why each partition moved, from the broker's own log: the causes of ``broker_handoffs``' handoffs.

Plain rows in (a group's classic generations, KIP-848 events, ownership changes, kept commits);
each handoff gets a ``cause`` (``pipelines.vocabulary.CAUSES``, the agent path's names and precedence:
``pipelines.gold.causes``) and a ``cause_confidence`` (``CAUSE_CONFIDENCES``):

- **exact**, where a record says it: a member joined (a member id new in a generation; a KIP-848
  member record with no predecessor): ``scale_out``, or ``start`` for the members that formed the
  group (``causes.start_joins``); a static member replaced under a new member id (same generation,
  no epoch bump): ``restart``, or ``protocol_migration`` when the replacement runs the other
  protocol; a subscription change (the member's topics differ): ``subscription_change``; a KIP-848
  epoch bump with no member change (partitions or topics changed: ``metadata_change``); a KIP-848
  member fenced when its revocation went unanswered for its rebalance timeout (its poll loop stood
  still): ``poll_interval_exceeded``.
- **probable**, where the coordinator writes no reason: a member that left. Its last sign of life
  (its last commit, its last own record) against when the group noticed it gone: within its
  timeout (classic: the least of its session and rebalance timeouts; KIP-848: its rebalance
  timeout, the client's max.poll.interval.ms) it left on purpose: ``restart`` when a member
  joined to replace it (``causes.restarts``: its identity within two minutes, anyone within ten
  seconds; ``protocol_migration`` on the other protocol), else ``scale_in``; later, it went silent:
  ``poll_interval_exceeded`` when the same identity came back (a stalled member rejoins), else
  ``crash``. A classic round in which nothing changed but the members rejoined: ``enforced`` (an
  application's enforce_rebalance; a classic metadata change shows as assignments of other partitions).

A handoff's cause is its previous owner's own (it left, was fenced, was replaced), else the
trigger of the round that moved it: classic, the generation that revoked the partition (a
cooperative round's first half) or the eager one that reassigned it; KIP-848, the latest
trigger at or before the revocation request (the epoch bump the owner answered). Several
triggers in one round: the first in precedence wins, exact if its own trigger is.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pipelines.gold.causes import RANK, RESTART_WINDOW_S, first_cause, restart_cause, restarts, start_joins

EXACT, PROBABLE = "exact", "probable"
# A KIP-848 fencing after the rebalance timeout lands within a heartbeat or two of the request plus the timeout.
FENCE_SLACK_MS = 3_000
# The log shows a join when its round completes, not when the process started (``causes.START_BURST_S``): members
# started together join a classic group a round apart, and a forming group's rounds are a second or two apart.
JOIN_BURST_S = 3.0


@dataclass(frozen=True)
class Membership:
    """A member arriving or leaving, as the log shows it (the event shape ``causes.restarts`` pairs)."""

    kind: str  # "join" | "leave"
    member_id: str
    at_ms: int  # classic: the join completion of the round that showed it; KIP-848: its record
    protocol: str  # the protocol the member runs: classic | consumer
    instance_id: str | None
    client_id: str | None
    client_host: str | None
    timeout_ms: int | None = None  # leave: how long a silent member stays in the group
    fenced: bool = False  # leave: removed a rebalance timeout after a revocation it did not answer
    records: str = "classic"  # the records that show it: a classic group's or a consumer group's

    def identity(self) -> set[tuple]:
        """What says two members are one process (``causes.restarts``' rule): its instance id, or its
        client id and host."""
        ids: set[tuple] = {("host+client", self.client_host, self.client_id)} if self.client_id else set()
        return ids | ({("instance", self.instance_id)} if self.instance_id else set())

    def event(self, at_ms: int | None = None) -> dict[str, Any]:
        """As ``pipelines.gold.causes`` reads a join or leave event."""
        return {"agent_id": self.member_id, "event_time_ms": self.at_ms if at_ms is None else at_ms,
                "host": self.client_host, "client_id": self.client_id, "group_instance_id": self.instance_id,
                "group_protocol": self.protocol}


class Seen:
    """Each member's signs of life: its commits (a commit is its partition's owner's: the coordinator
    takes one only from the current generation or epoch) and its own KIP-848 records."""

    def __init__(self, changes: list[dict[str, Any]], commits: Iterable[dict[str, Any]],
                 events: Iterable[dict[str, Any]]) -> None:
        tenures: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)
        for c in sorted(changes, key=lambda c: c["at_ms"]):
            if c["topic"] is not None:
                tenures[(c["topic"], c["partition"])].append((c["at_ms"], c["owner"] or ""))
        times: dict[str, list[int]] = defaultdict(list)
        for commit in commits:
            spans = tenures.get((commit["topic"], commit["partition"]), [])
            i = bisect.bisect_left(spans, (commit["at_ms"], "")) - 1
            if i >= 0 and spans[i][1]:
                times[spans[i][1]].append(commit["at_ms"])
        for e in events:
            if e["member_id"] and e["kind"] not in ("member_removed", "assignment_removed", "member_target_removed"):
                times[e["member_id"]].append(e["at_ms"])
        self._times = {m: sorted(ts) for m, ts in times.items()}

    def before(self, member_id: str, at_ms: int) -> int:
        """The member's last sign of life before ``at_ms`` (``at_ms`` itself if none)."""
        times = self._times.get(member_id, [])
        i = bisect.bisect_left(times, at_ms)
        return times[i - 1] if i else at_ms


def classic_memberships(generations: list[dict[str, Any]]) -> list[Membership]:
    """Joins and leaves between a classic group's generations (a static replacement is neither)."""
    out: list[Membership] = []
    members: dict[str, dict[str, Any]] = {}
    for gen in generations:
        if gen["kind"] == "unchanged":
            continue
        at = gen["join_completed_ms"] if gen["join_completed_ms"] is not None else gen["synced_ms"]
        now = {m["member_id"]: m for m in gen["members"]}
        replaced = {r["old_member_id"]: r["new_member_id"] for r in gen["replaced"]}
        for member_id in gen["left"]:  # deleted: the end, or the group converting (``continuing``)
            m = members[member_id]
            timeouts = [t for t in (m["session_timeout_ms"], m["rebalance_timeout_ms"]) if t]
            out.append(Membership("leave", member_id, at, "classic", m["instance_id"], m["client_id"],
                                  m["client_host"], min(timeouts) if timeouts else None))
        out += [Membership("join", j, at, "classic", now[j]["instance_id"], now[j]["client_id"], now[j]["client_host"])
                for j in gen["joined"]]
        for old in replaced:
            members.pop(old, None)
        members.update(now)
    return out


def consumer_memberships(events: list[dict[str, Any]]) -> list[Membership]:
    """Joins and leaves in a KIP-848 group's events (a static replacement and its predecessor's
    tombstones are neither); a leave ``fenced`` when it came a rebalance timeout after a revocation
    request the member never acknowledged."""
    out: list[Membership] = []
    known: dict[str, dict[str, Any]] = {}  # member id -> its latest member event
    asked: dict[str, int] = {}  # member id -> an unanswered revocation request
    replaced = {e["replaces_member_id"] for e in events if e["kind"] == "static_replacement"}
    for e in events:
        member, kind = e["member_id"], e["kind"]
        if kind == "revocation_requested":
            asked.setdefault(member, e["at_ms"])
        elif kind in ("revocation_acknowledged", "static_leave"):
            asked.pop(member, None)
        elif kind in ("member_joined", "static_replacement", "subscription_changed", "member_updated"):
            if kind == "member_joined":
                out.append(Membership("join", member, e["at_ms"], e["member_protocol"], e["instance_id"],
                                      e["client_id"], e["client_host"], records="consumer"))
            known[member] = e
        elif kind == "member_removed" and member not in replaced:
            m = known.pop(member, e)
            timeout, request = m["rebalance_timeout_ms"], asked.pop(member, None)
            fenced = None not in (timeout, request) and e["at_ms"] - request >= timeout - FENCE_SLACK_MS
            out.append(Membership("leave", member, e["at_ms"], m["member_protocol"] or "consumer", m["instance_id"],
                                  m["client_id"], m["client_host"], timeout, fenced, "consumer"))
    return out


def continuing(memberships: list[Membership], window_ms: int = 1_000) -> list[Membership]:
    """Without a member id's leave in one kind of records and its join in the other within ``window_ms``:
    the group converting between the classic and consumer protocols rewrites its members, who stay."""
    keys = defaultdict(list)
    for m in memberships:
        keys[m.member_id].append(m)
    dropped = set()
    for ms in keys.values():
        for a in ms:
            for b in ms:
                swapped = (a.kind, b.kind) == ("leave", "join") and a.records != b.records
                if swapped and abs(a.at_ms - b.at_ms) <= window_ms:
                    dropped.update((id(a), id(b)))
    return sorted((m for m in memberships if id(m) not in dropped), key=lambda m: m.at_ms)


Causes = dict[tuple[str, str, int], tuple[str, str]]  # (kind, member id, at_ms) -> (cause, confidence)


def membership_causes(memberships: list[Membership], seen: Seen) -> Causes:
    """Each join's and leave's cause and confidence (the module docstring's rules)."""
    joins = [m for m in memberships if m.kind == "join"]
    leaves = [m for m in memberships if m.kind == "leave"]
    formed = start_joins([j.event() for j in joins], JOIN_BURST_S)
    silent = [m for m in leaves if m.timeout_ms and m.at_ms - seen.before(m.member_id, m.at_ms) >= m.timeout_ms]
    graceful = [m for m in leaves if m not in silent]
    pairs = restarts([j.event() for j in joins], [m.event() for m in graceful])
    returns = {m.member_id: _return_of(m, joins, seen) for m in silent}
    out: Causes = {}
    for m in graceful:
        join = pairs.get(m.member_id)
        out[("leave", m.member_id, m.at_ms)] = ((restart_cause(m.event(), join), PROBABLE) if join
                                                else ("scale_in", PROBABLE))
    for m in silent:
        stalled = "poll_interval_exceeded"
        out[("leave", m.member_id, m.at_ms)] = ((stalled, EXACT) if m.fenced else (stalled, PROBABLE)
                                                if returns[m.member_id] else ("crash", PROBABLE))
    back = {j.member_id: m for m in silent if (j := returns[m.member_id]) is not None}
    joined_for = {j["agent_id"]: restart_cause(next(m.event() for m in graceful if m.member_id == a), j)
                  for a, j in pairs.items()}
    for j in joins:
        cause = (("poll_interval_exceeded", PROBABLE) if j.member_id in back
                 else (joined_for[j.member_id], PROBABLE) if j.member_id in joined_for
                 else ("start", EXACT) if j.member_id in formed else ("scale_out", EXACT))
        out[("join", j.member_id, j.at_ms)] = cause
    return out


def _return_of(leave: Membership, joins: list[Membership], seen: Seen) -> Membership | None:
    """The first later join of the same process (same member id, or identity) within ``RESTART_WINDOW_S``."""
    since = seen.before(leave.member_id, leave.at_ms)
    return next((j for j in joins if since < j.at_ms <= since + RESTART_WINDOW_S * 1000
                 and (j.member_id == leave.member_id or j.identity() & leave.identity())), None)


@dataclass(frozen=True)
class Trigger:
    """Something the log shows that made the group rebalance, with how sure its cause is."""

    at_ms: int
    cause: str
    confidence: str


def strongest(triggers: Iterable[Trigger]) -> tuple[str, str]:
    """The first cause in precedence, exact if one of its own triggers is; ``unknown`` without any."""
    found = list(triggers)
    cause = first_cause(t.cause for t in found)
    exact = any(t.cause == cause and t.confidence == EXACT for t in found)
    return cause, EXACT if exact else PROBABLE


def _membership_triggers(causes: Causes) -> list[Trigger]:
    return sorted((Trigger(at, cause, confidence) for (_, _, at), (cause, confidence) in causes.items()),
                  key=lambda t: (t.at_ms, RANK[t.cause]))


def classic_round_triggers(generations: list[dict[str, Any]], causes: Causes) -> dict[int, list[Trigger]]:
    """generation -> what made the group rebalance into it: its joins and leaves, its members'
    subscription changes; nothing of those, the members rejoined on their own: ``metadata_change``
    when the assignment covers other partitions than before, else ``enforced`` (both probable)."""
    by_time = defaultdict(list)
    for t in _membership_triggers(causes):
        by_time[t.at_ms].append(t)
    out: dict[int, list[Trigger]] = {}
    previous: dict[str, Any] | None = None
    for gen in generations:
        if gen["kind"] not in ("generation", "empty"):
            previous = None if gen["kind"] == "deleted" else gen
            continue
        at = gen["join_completed_ms"] if gen["join_completed_ms"] is not None else gen["synced_ms"]
        found = list(by_time.get(at, []))
        before = {m["member_id"]: m["subscribed_topics"] for m in (previous or {}).get("members", [])}
        found += [Trigger(at, "subscription_change", EXACT) for m in gen["members"]
                  if m["member_id"] in before and m["subscribed_topics"] != before[m["member_id"]]]
        if not found and previous is not None:
            moved = _partitions(gen) != _partitions(previous)
            found.append(Trigger(at, "metadata_change" if moved else "enforced", PROBABLE))
        out[gen["generation"]] = found
        previous = gen
    return out


def _partitions(gen: dict[str, Any]) -> set[tuple[str, int]]:
    return {(tp["topic"], p) for m in gen["members"] for tp in m["assigned_partitions"] or [] for p in tp["partitions"]}


def consumer_triggers(events: list[dict[str, Any]], causes: Causes) -> list[Trigger]:
    """A KIP-848 group's triggers in time order: its joins and leaves, subscription changes, and
    epoch bumps with no member change beside them (a metadata change: partitions, topics, a regex)."""
    out = [t for t in _membership_triggers(causes)]
    member_times = {e["at_ms"] for e in events if e["kind"] in ("member_joined", "member_removed", "member_updated",
                                                                "subscription_changed", "static_replacement")}
    for e in events:
        if e["kind"] == "subscription_changed":
            out.append(Trigger(e["at_ms"], "subscription_change", EXACT))
        elif e["kind"] == "regex_resolved" or (e["kind"] == "group_epoch" and e["at_ms"] not in member_times):
            out.append(Trigger(e["at_ms"], "metadata_change", EXACT))
    return sorted(out, key=lambda t: (t.at_ms, RANK[t.cause]))


def _own_cause(h: dict[str, Any], leaves: dict[str, list[tuple[int, tuple[str, str]]]],
               protocols: dict[str, str]) -> tuple[str, str] | None:
    """The previous owner's own reason to let go: it was replaced (a static restart), or it left."""
    prev = h["prev_member_id"]
    if h["change_kind"] == "replaced":
        migrated = protocols.get(prev, "classic") != protocols.get(h["next_member_id"], "classic")
        return "protocol_migration" if migrated else "restart", EXACT
    gone = [cause for at, cause in leaves.get(prev, []) if h["prev_assigned_ms"] <= at <= h["assigned_ms"]]
    return gone[0] if gone else None


def _round_cause(h: dict[str, Any], rounds: dict[int, list[Trigger]], synced: dict[int, int],
                 triggers: list[Trigger]) -> tuple[str, str]:
    """The cause of the round that moved ``h``'s partition (the module docstring)."""
    if h["protocol"] == "classic":
        revoked = h["broker_release"] == "revoked"
        return strongest(rounds.get(synced.get(h["revoke_ms"], h["generation"]) if revoked else h["generation"], []))
    asked = h["revoke_requested_ms"] if h["revoke_requested_ms"] is not None else h["assigned_ms"]
    i = bisect.bisect_right([t.at_ms for t in triggers], asked)
    return strongest(t for t in triggers[:i] if t.at_ms == triggers[i - 1].at_ms) if i else ("unknown", PROBABLE)


def broker_causes(handoffs: list[dict[str, Any]], generations: list[dict[str, Any]], events: list[dict[str, Any]],
                  changes: list[dict[str, Any]], commits: Iterable[dict[str, Any]]) -> None:
    """Sets each of one group's broker handoffs' ``cause`` and ``cause_confidence`` (the module docstring)."""
    memberships = continuing(classic_memberships(generations) + consumer_memberships(events))
    causes = membership_causes(memberships, Seen(changes, commits, events))
    leaves: dict[str, list[tuple[int, tuple[str, str]]]] = defaultdict(list)
    for (kind, member, at), cause in sorted(causes.items(), key=lambda kv: kv[0][2]):
        if kind == "leave":
            leaves[member].append((at, cause))
    protocols = {e["member_id"]: e["member_protocol"] for e in events if e["member_protocol"]}
    rounds = classic_round_triggers(generations, causes)
    synced = {g["synced_ms"]: g["generation"] for g in generations if g["kind"] == "generation"}
    triggers = consumer_triggers(events, causes)
    for h in handoffs:
        h["cause"], h["cause_confidence"] = _own_cause(h, leaves, protocols) or _round_cause(h, rounds, synced,
                                                                                            triggers)
