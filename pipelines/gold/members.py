"""The members of a group, one row per member process (agent): who it was, how it was
configured, when it joined and left and why, what it subscribed to, and when it stalled
or asked for a rebalance; and what the KIP-848 readiness lint reads (``recommend.readiness``):
its client version, regex subscription, the names of the settings it set (never their
values), the assignment calls its rebalance callbacks made and the client errors it reported.

This is the group's membership timeline: what the what-if replay (``pipelines.simulator.replay``)
runs through other assignors, protocols and settings, and what the recommendation rules
read a group's configuration from. Pure Python over one group's events, beside the
ownership intervals and handoffs of the same pass.
"""
from __future__ import annotations

from typing import Any

from pipelines.catalog import MEMBERS
from pipelines.gold.causes import STALL_REPORT_SLACK_MS, Bodies, Trigger, is_leave, is_stall

KINDS = {"member_config", "state_transition", "rebalance_requested", "client_error", "partitions_assigned",
         "partitions_revoked", "partitions_lost"}
MEMBER_COLUMNS = MEMBERS.column_names()


def _member(e: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    row = dict.fromkeys(MEMBER_COLUMNS)
    row.update(cluster_id=e["cluster_id"], group_id=e["group_id"], agent_id=e["agent_id"], member_id=e["member_id"],
               group_instance_id=e["group_instance_id"], host=e["host"], client_id=e["client_id"],
               group_protocol=e["group_protocol"], assignor=e["assignor"],
               commit_on_revoke=b["commit_on_revoke"], enable_auto_commit=b["enable_auto_commit"],
               auto_commit_interval_ms=b["auto_commit_interval_ms"], session_timeout_ms=b["session_timeout_ms"],
               heartbeat_interval_ms=b["heartbeat_interval_ms"], max_poll_interval_ms=b["max_poll_interval_ms"],
               remote_assignor=b["config"].get("group.remote.assignor"),
               joined_ms=e["event_time_ms"], last_seen_ms=e["event_time_ms"], crashed=False,
               subscriptions=[{"at_ms": e["event_time_ms"], "topics": sorted(b["topics"])}], stalls=[],
               enforced_ms=[], librdkafka_version=b["librdkafka_version"], pattern=b["pattern"],
               config_keys=sorted(b["config"]), callback_calls=[], client_errors=[])
    return row


def _add_distinct(names: list[str], new: list[str]) -> None:
    """Append each of ``new`` not in ``names`` yet (first-seen order)."""
    names.extend(n for n in dict.fromkeys(new) if n not in names)


def members_of(bodies: Bodies, triggers: list[Trigger], handoffs: list[dict[str, Any]],
               last_seen: dict[str, int]) -> list[dict[str, Any]]:
    """One row per agent that reported its configuration (its ``member_config`` at start).
    ``bodies``: the group's events with their parsed bodies, in time order (kinds other than
    ``KINDS`` are skipped); ``triggers``: ``causes.triggers_of(bodies)``; ``last_seen``: each
    agent's latest event time, over all its events."""
    causes = {(t.agent_id, t.time_ms): t.cause for t in triggers}
    rows: dict[str, dict[str, Any]] = {}
    for e, b in bodies:
        if e["kind"] not in KINDS:
            continue
        agent, t = e["agent_id"], e["event_time_ms"]
        if e["kind"] == "member_config" and b["reason"] == "start" and agent not in rows:
            rows[agent] = _member(e, b)
            rows[agent]["join_cause"] = causes.get((agent, t))
            continue
        row = rows.get(agent)
        if row is None:
            continue
        if e["kind"] in ("partitions_assigned", "partitions_revoked", "partitions_lost"):
            _add_distinct(row["callback_calls"], b.get("callback_calls") or [])  # absent: an agent older than it
        if e["kind"] == "client_error":
            _add_distinct(row["client_errors"], [b["name"]])
        if e["kind"] == "member_config" and b["reason"] == "subscription_changed":
            row["subscriptions"].append({"at_ms": t, "topics": sorted(b["topics"])})
            row["pattern"] = b["pattern"] or row["pattern"]
        elif e["kind"] == "partitions_assigned":
            row["member_id"] = e["member_id"] or row["member_id"]
            if row["stalls"] and row["stalls"][-1]["back_ms"] is None:
                row["stalls"][-1]["back_ms"] = t
        elif is_leave(e, b) and row["left_ms"] is None:
            row.update(left_ms=t, leave_cause=causes.get((agent, t)))
        elif e["kind"] == "rebalance_requested" and b["accepted"]:
            row["enforced_ms"].append(t)
        elif is_stall(e, b) and not (row["stalls"] and row["stalls"][-1]["back_ms"] is None):
            row["stalls"].append({"at_ms": t, "back_ms": None})
    crashed = {h["prev_agent_id"] for h in handoffs if h["release_kind"] == "crash"}
    lost_by: dict[str, list[dict[str, Any]]] = {}  # one scan, not one per member (members times handoffs)
    for h in handoffs:
        if h["release_kind"] == "lost":
            lost_by.setdefault(h["prev_agent_id"], []).append(h)
    for agent, row in rows.items():
        row["last_seen_ms"] = last_seen[agent]
        row["crashed"] = agent in crashed and row["left_ms"] is None
        for stall in row["stalls"]:
            stall["began_ms"] = _stall_began(stall["at_ms"], lost_by.get(agent, []), row["max_poll_interval_ms"])
    return list(rows.values())


def _stall_began(reported_ms: int, lost: list[dict[str, Any]], max_poll_interval_ms: int) -> int:
    """When a stall began: the member reports it when it polls again, after the group gave its
    partitions away ``max.poll.interval.ms`` after its last poll (the earliest next assignment of
    a partition it lost then), else at least that long before the report."""
    given = [h["assigned_ms"] for h in lost if abs(h["revoke_ms"] - reported_ms) <= STALL_REPORT_SLACK_MS]
    return min([*given, reported_ms]) - max_poll_interval_ms
