"""Why each partition moved: every handoff's cause, and the rebalance rounds it belongs to.

A handoff's cause is what made its previous owner let the partition go. The previous
owner is asked first, between its assignment and its release:

- ``crash``: it never released the partition and did not leave (killed, or gone silent);
- ``poll_interval_exceeded``: it lost the partition after a stall past max.poll.interval.ms
  (a move to the stale state or a _MAX_POLL_EXCEEDED error);
- ``session_lost``: it lost the partition without such a stall (session timeout, fencing);
- ``restart`` / ``scale_in``: it left (closed or unsubscribed); ``restart`` when a member
  joined to replace it (``restarts``: its identity within ``RESTART_WINDOW_S``, anyone
  within ``REPLACE_WINDOW_S``);
- ``subscription_change`` / ``enforced``: it changed its own subscription / asked for the rebalance.

Otherwise the owner stayed and gave the partition up because the group rebalanced, and
the cause is that rebalance's trigger: a member joining (``scale_out``, ``restart`` when it
replaces a member that left, ``start`` for the members that formed the group), leaving, changing its
subscription, asking for a rebalance, stalling (and rejoining after the stall: its return moves
partitions too, under the same cause), crashing or losing its session elsewhere. A rebalance
no instrumented member triggered, in a group where gold sees owners without the agent
(``pipelines.gold.unseen``), is ``unseen_member``: a member without the agent joined, left or
restarted. ``unknown`` stays for what telemetry cannot explain.

Which rebalance moved a partition: under the classic protocol a rebalance is a generation.
A trigger seen at generation g (a leave, a subscription change, a request, a stall) makes
the group rejoin at g + 1; a join belongs to the generation of the joiner's first
assignment; a crash or a loss to the generation that reassigned its partitions; a
handoff to the generation of its next owner's assignment. A generation with no trigger of
its own (a cooperative follow-up round, which moves the partitions the first round
revoked) takes the previous generation's when it follows within the episode gap (an eager
round is never a follow-up: it moves every partition on its own). The
consumer protocol (KIP-848) has no group generation (the envelope carries the member
epoch), so there a handoff's trigger is the latest one at or before its release, within
the gap. Several triggers in one rebalance: the first in ``PRECEDENCE`` wins, and
``rounds`` says which handoffs moved together (the episodes split where causes change).
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from consumer_agent.contract import JOINING_STATE, LEAVE_REASONS, LEAVING_STATES, STALE_STATE
from pipelines.vocabulary import CAUSE_NAMES, RESTART_CAUSES

PRECEDENCE = CAUSE_NAMES  # the vocabulary declares the causes in precedence order
RANK = {cause: i for i, cause in enumerate(PRECEDENCE)}
# A member with the same identity joining this soon after a leave is its restart: a
# deployment or an orchestrator restarts a process within seconds to a minute; later, the
# leave was a scale-in and the join a scale-out. Anyone joining this soon after a leave
# replaces it (a restart under a new name); a scale-in and a scale-out seconds apart are rare.
RESTART_WINDOW_S = 120.0
REPLACE_WINDOW_S = 10.0
# The members a fleet starts with join within a second or two of each other.
START_BURST_S = 2.0
# librdkafka may serve the lost callback before it returns the poll-interval error: a stall
# reported this soon after the loss still explains it.
STALL_REPORT_SLACK_MS = 5_000
POLL_EXCEEDED_ERROR = "_MAX_POLL_EXCEEDED"
Bodies = list[tuple[dict[str, Any], dict[str, Any]]]  # (event, its parsed body)


@dataclass(frozen=True)
class Trigger:
    """Something a member did that makes its group rebalance."""

    time_ms: int
    agent_id: str
    cause: str
    generation: int | None  # classic: the generation it makes the group rejoin at (None: unknown)


def first_cause(causes: Iterable[str]) -> str:
    return min(causes, key=RANK.__getitem__, default="unknown")


def _identity(e: dict[str, Any]) -> set[tuple]:
    ids = {("host+client", e["host"], e["client_id"])}
    if e["group_instance_id"]:
        ids.add(("instance", e["group_instance_id"]))
    return ids


def is_leave(e: dict[str, Any], b: dict[str, Any]) -> bool:
    """A member leaving on purpose (a KIP-848 stall passes through the leaving states too)."""
    return e["kind"] == "state_transition" and b["to_state"] in LEAVING_STATES and b["reason"] in LEAVE_REASONS


def is_stall(e: dict[str, Any], b: dict[str, Any]) -> bool:
    if e["kind"] == "client_error":
        return b["name"] == POLL_EXCEEDED_ERROR
    return e["kind"] == "state_transition" and b["to_state"] == STALE_STATE


def restarts(joins: list[dict[str, Any]], leaves: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """leaving agent -> the join event that restarted it: each join replaces one leave.

    A leave pairs with the first later join of its identity within ``RESTART_WINDOW_S``,
    else with the first later join of anyone within ``REPLACE_WINDOW_S`` (a replacement
    under a new name: a pod restarted under a new host name, a process numbering its client
    id). A join before the leave is a second instance (a surge), not a restart.
    """
    pairs: dict[str, dict[str, Any]] = {}
    free = sorted(joins, key=lambda e: e["event_time_ms"])
    for leaver in sorted(leaves, key=lambda e: e["event_time_ms"]):
        def after(window_s: float) -> list[dict[str, Any]]:
            return [j for j in free if j["agent_id"] != leaver["agent_id"]
                    and 0 <= j["event_time_ms"] - leaver["event_time_ms"] <= window_s * 1000]
        same = [j for j in after(RESTART_WINDOW_S) if _identity(j) & _identity(leaver)]
        joiner = (same or after(REPLACE_WINDOW_S) or [None])[0]
        if joiner is not None:
            free.remove(joiner)
            pairs[leaver["agent_id"]] = joiner
    return pairs


def restart_cause(leave: dict[str, Any], join: dict[str, Any]) -> str:
    """``protocol_migration`` when the process came back on the other ``group.protocol`` (KIP-848's
    online migration, or its rollback, one member at a time), else ``restart``."""
    return "protocol_migration" if leave["group_protocol"] != join["group_protocol"] else "restart"


def start_joins(joins: list[dict[str, Any]], burst_s: float = START_BURST_S) -> set[str]:
    """The agents that formed the group: its first join and each join within ``burst_s``
    of the previous one (a fleet's members start together; a later join is a scale-out)."""
    formed: set[str] = set()
    last = None
    for e in sorted(joins, key=lambda e: e["event_time_ms"]):
        if last is not None and e["event_time_ms"] - last > burst_s * 1000:
            break
        formed.add(e["agent_id"])
        last = e["event_time_ms"]
    return formed


def triggers_of(bodies: Bodies) -> list[Trigger]:
    """Every trigger in one group's events, each with its cause."""
    joins = [e for e, b in bodies if e["kind"] == "member_config" and b["reason"] == "start"]
    formed = start_joins(joins)
    leaves: dict[str, dict[str, Any]] = {}  # agent -> its first leave (KIP-848 passes several leaving states)
    for e, b in bodies:
        if is_leave(e, b):
            leaves.setdefault(e["agent_id"], e)
    pairs = restarts(joins, list(leaves.values()))
    left_to_restart = {a: restart_cause(leaves[a], j) for a, j in pairs.items()}
    joined_to_restart = {j["agent_id"]: left_to_restart[a] for a, j in pairs.items()}
    first_generation: dict[str, int] = {}
    generation_began: dict[int, int] = {}  # generation -> its first assignment
    for e, _ in bodies:
        if e["kind"] == "partitions_assigned" and e["generation"] >= 0:
            first_generation.setdefault(e["agent_id"], e["generation"])
            generation_began.setdefault(e["generation"], e["event_time_ms"])
    departures = _stall_departures(bodies)
    out = _returns(bodies, departures)
    for e, b in bodies:
        kind, t = e["kind"], e["event_time_ms"]
        rejoin = _next_generation(e)
        if kind == "member_config" and b["reason"] == "start":
            cause = ("start" if e["agent_id"] in formed
                     else joined_to_restart.get(e["agent_id"], "scale_out"))
            rejoin = first_generation.get(e["agent_id"])
            if rejoin is not None and generation_began[rejoin] < t:
                rejoin = None  # a static member back within its session: its old generation, no rebalance
        elif is_leave(e, b):
            cause = left_to_restart.get(e["agent_id"], "scale_in")
        elif kind == "member_config" and b["reason"] == "subscription_changed":
            cause = "subscription_change"
        elif kind == "rebalance_requested" and b["accepted"]:
            cause = "enforced"
        elif is_stall(e, b):
            cause = "poll_interval_exceeded"
            left = departures[id(e)]  # a late report's own time and generation may be its return's
            t, rejoin = left["event_time_ms"], _next_generation(left)
        else:
            continue
        out.append(Trigger(t, e["agent_id"], cause, rejoin))
    return sorted(out, key=lambda t: t.time_ms)


def _next_generation(e: dict[str, Any]) -> int | None:
    """The generation a trigger at ``e`` makes the group rejoin at (None: unknown)."""
    return e["generation"] + 1 if e["generation"] >= 0 else None


def _stall_departures(bodies: Bodies) -> dict[int, dict[str, Any]]:
    """``id`` of each stall report -> the event at which its member left the group for the stall:
    the report itself, or the lost callback served up to ``STALL_REPORT_SLACK_MS`` before it.
    librdkafka can serve the lost callback, the rejoin and even the new assignment inside the poll
    that then returns the ``_MAX_POLL_EXCEEDED`` error (slow-processing under range on a loaded
    machine: the error 80 ms after the new assignment), so the report's own generation may already
    be the return's."""
    lost: dict[str, dict[str, Any]] = {}  # agent -> its latest lost callback
    out = {}
    for e, b in bodies:
        if e["kind"] == "partitions_lost":
            lost[e["agent_id"]] = e
        elif is_stall(e, b):
            before = lost.get(e["agent_id"])
            near = before is not None and e["event_time_ms"] - before["event_time_ms"] <= STALL_REPORT_SLACK_MS
            out[id(e)] = before if near else e
    return out


def _returns(bodies: Bodies, departures: dict[int, dict[str, Any]]) -> list[Trigger]:
    """A stalled member's return: its first move to a joining state after it left for the stall (or
    its first assignment), at the generation of that assignment (classic), caused by the stall."""
    left: dict[str, list[int]] = defaultdict(list)  # agent -> when it left for each stall not yet returned from
    for d in departures.values():
        left[d["agent_id"]].append(d["event_time_ms"])
    for times in left.values():
        times.sort()
    back: dict[str, int] = {}  # agent -> when it rejoined
    out = []
    for e, b in bodies:
        agent, t = e["agent_id"], e["event_time_ms"]
        pending = left.get(agent)
        if not pending or t < pending[0]:
            continue
        if e["kind"] == "state_transition" and b["to_state"] == JOINING_STATE:
            back.setdefault(agent, t)
        elif e["kind"] == "partitions_assigned":
            del pending[:bisect.bisect_right(pending, t)]  # every stall it left for before returns here
            generation = e["generation"] if e["generation"] >= 0 else None
            out.append(Trigger(back.pop(agent, t), agent, "poll_interval_exceeded", generation))
    return out


def _owner_cause(h: dict[str, Any], mine: list[Trigger]) -> str | None:
    """The cause the previous owner itself gives (``mine``: its triggers, in time order)."""
    kind = h["release_kind"]
    if kind == "crash":
        return "crash"
    if kind == "lost":
        stalled = any(t.cause == "poll_interval_exceeded"
                      and h["prev_assigned_ms"] <= t.time_ms <= h["revoke_ms"] + STALL_REPORT_SLACK_MS for t in mine)
        return "poll_interval_exceeded" if stalled else "session_lost"
    own = [t.cause for t in mine if h["prev_assigned_ms"] <= t.time_ms <= h["revoke_ms"]
           and t.cause in (*RESTART_CAUSES, "scale_in", "subscription_change", "enforced")]
    return own[-1] if own else None


def handoff_causes(bodies: Bodies, triggers: list[Trigger], handoffs: list[dict[str, Any]],
                   gap_s: float) -> dict[str, tuple[str, Any]]:
    """handoff_id -> (cause, round key): the round key groups handoffs moved by one rebalance."""
    fallback = "unseen_member" if any(h.get("unseen_owner") for h in handoffs) else "unknown"
    by_agent: dict[str, list[Trigger]] = defaultdict(list)
    for t in triggers:
        by_agent[t.agent_id].append(t)
    own = {h["handoff_id"]: _owner_cause(h, by_agent[h["prev_agent_id"]]) for h in handoffs}
    classic = bool(bodies) and bodies[0][0]["group_protocol"] == "classic"
    if classic:
        return _by_generation(triggers, handoffs, own, bodies, gap_s, fallback)
    return _by_time(triggers, handoffs, own, gap_s, fallback)


def _by_generation(triggers: list[Trigger], handoffs: list[dict[str, Any]], own: dict[str, str | None],
                   bodies: Bodies, gap_s: float, fallback: str) -> dict[str, tuple[str, Any]]:
    span: dict[int, list[int]] = {}  # generation -> [first, last] assignment time
    eager: set[int] = set()
    for e, b in bodies:
        if e["kind"] == "partitions_assigned" and e["generation"] >= 0:
            s = span.setdefault(e["generation"], [e["event_time_ms"], e["event_time_ms"]])
            s[0], s[1] = min(s[0], e["event_time_ms"]), max(s[1], e["event_time_ms"])
            if not b["incremental"]:
                eager.add(e["generation"])
    completed = sorted(span)
    causes: dict[int, list[str]] = defaultdict(list)
    for t in triggers:
        if t.generation is not None and (g := _completed_round(completed, span, t, gap_s)) is not None:
            causes[g].append(t.cause)
    for h in handoffs:
        if h["release_kind"] in ("lost", "crash"):
            causes[h["generation"]].append(own[h["handoff_id"]])
    cause_of: dict[int, str] = {}
    previous: int | None = None
    for g in completed:
        if causes.get(g):
            cause_of[g] = first_cause(causes[g])
        elif (previous is not None and previous in cause_of and g not in eager
              and span[g][0] - span[previous][1] <= gap_s * 1000):
            cause_of[g] = cause_of[previous]  # a follow-up round
        previous = g
    return {h["handoff_id"]: (own[h["handoff_id"]] or cause_of.get(h["generation"], fallback), h["generation"])
            for h in handoffs}


def _completed_round(completed: list[int], span: dict[int, list[int]], t: Trigger, gap_s: float) -> int | None:
    """The round ``t`` opened, or when no member was ever assigned in it, the next one that completed
    within the gap: a second leave during the first's join aborts its round (the leaver still reports
    the generation before), and the round after moves both leavers' partitions."""
    i = bisect.bisect_left(completed, t.generation)
    if i == len(completed):
        return None
    g = completed[i]
    return g if g == t.generation or span[g][0] - t.time_ms <= gap_s * 1000 else None


def _by_time(triggers: list[Trigger], handoffs: list[dict[str, Any]], own: dict[str, str | None],
             gap_s: float, fallback: str) -> dict[str, tuple[str, Any]]:
    ordered = sorted(triggers, key=lambda t: t.time_ms)
    times = [t.time_ms for t in ordered]
    out = {}
    for h in handoffs:
        cause = own[h["handoff_id"]]
        release = h["revoke_ms"] if h["revoke_ms"] is not None else h["assigned_ms"]
        i = bisect.bisect_right(times, release) - 1
        trigger = ordered[i] if i >= 0 and release - times[i] <= gap_s * 1000 else None
        if cause is None:
            cause = trigger.cause if trigger else fallback
        out[h["handoff_id"]] = (cause, (trigger.time_ms, trigger.agent_id) if trigger else ("own", h["prev_agent_id"]))
    return out
