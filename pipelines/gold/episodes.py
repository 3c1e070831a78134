"""Rebalance episodes: one group's rebalance, with what caused it.

An episode is a cluster of one group's rebalance events (assign, revoke, lost, state
transitions, member configs, rebalance requests, poll-interval errors) where each event
follows the previous one by at most ``gap_s`` seconds. A late event lands in the
cluster its time belongs to (the whole group is recomputed and replaced), so it can
extend, merge or split episodes.

Causes, checked in this order (the first that holds is ``cause``; all that hold are in
``causes``):

- ``enforced``: a rebalance_requested event that was accepted;
- ``subscription_change``: a member_config with reason subscription_changed;
- ``poll_interval_exceeded``: a _MAX_POLL_EXCEEDED error or a move to the stale state;
- ``crash``: a partition lost, or taken from an owner that never released it and did
  not leave (crash or lost member);
- ``restart``: a member left and then a member with the same group_instance_id, or the
  same host and client id, joined (a member that joined before the other left is a
  second instance, not its restart);
- ``scale_in``: a member left and nobody came back for it;
- ``scale_out``: a new member joined that replaced nobody;
- ``start``: the group's first episode (members joining an empty group);
- ``unknown`` otherwise.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from consumer_agent.contract import LEAVING_STATES, STALE_STATE
from pipelines.gold.ownership import body_of

CLUSTER_KINDS = {"partitions_assigned", "partitions_revoked", "partitions_lost", "state_transition",
                 "member_config", "rebalance_requested", "client_error"}
POLL_EXCEEDED_ERROR = "_MAX_POLL_EXCEEDED"

def is_rebalance_event(event: dict[str, Any]) -> bool:
    if event["kind"] == "client_error":
        return body_of(event)["name"] == POLL_EXCEEDED_ERROR
    return event["kind"] in CLUSTER_KINDS


def clusters(events: Iterable[dict[str, Any]], gap_s: float) -> list[list[dict[str, Any]]]:
    """Rebalance events split where two consecutive ones are more than ``gap_s`` apart."""
    ordered = sorted((e for e in events if is_rebalance_event(e)),
                     key=lambda e: (e["event_time_ms"], e["agent_id"], e["seq"]))
    out: list[list[dict[str, Any]]] = []
    for e in ordered:
        if out and e["event_time_ms"] - out[-1][-1]["event_time_ms"] <= gap_s * 1000:
            out[-1].append(e)
        else:
            out.append([e])
    return out


def _identity(e: dict[str, Any]) -> set[tuple]:
    ids = {("host+client", e["host"], e["client_id"])}
    if e["group_instance_id"]:
        ids.add(("instance", e["group_instance_id"]))
    return ids


def causes_of(bodies: list[tuple[dict[str, Any], dict[str, Any]]], handoffs: list[dict[str, Any]],
              first: bool) -> list[str]:
    """Every cause that holds for one cluster (its events, each with its parsed body) and
    the handoffs it completed, in precedence order."""
    joined = {e["agent_id"]: e for e, b in bodies if e["kind"] == "member_config" and b["reason"] == "start"}
    left = {e["agent_id"]: e for e, b in bodies
            if e["kind"] == "state_transition" and b["to_state"] in LEAVING_STATES}
    def replaces(joiner: dict[str, Any], leaver: dict[str, Any]) -> bool:
        return (joiner["agent_id"] != leaver["agent_id"] and joiner["event_time_ms"] >= leaver["event_time_ms"]
                and bool(_identity(joiner) & _identity(leaver)))

    returned = {a for a, e in left.items() if any(replaces(j, e) for j in joined.values())}
    replacing = {a for a, j in joined.items() if any(replaces(j, e) for e in left.values())}
    crashed = any(h["release_kind"] in ("crash", "lost") and h["prev_agent_id"] not in left for h in handoffs)
    checks = [
        ("enforced", any(e["kind"] == "rebalance_requested" and b["accepted"] for e, b in bodies)),
        ("subscription_change", any(e["kind"] == "member_config" and b["reason"] == "subscription_changed"
                                    for e, b in bodies)),
        ("poll_interval_exceeded", any(e["kind"] == "client_error" or
                                       (e["kind"] == "state_transition" and b["to_state"] == STALE_STATE)
                                       for e, b in bodies)),
        ("crash", crashed),
        ("restart", bool(returned)),
        ("scale_in", bool(set(left) - returned)),
        ("scale_out", bool(set(joined) - replacing) and not first),
        ("start", first),
    ]
    return [name for name, holds in checks if holds] or ["unknown"]


def episodes_of(events: Iterable[dict[str, Any]], handoffs: list[dict[str, Any]],
                gap_s: float) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One group's episodes, and handoff_id -> episode_id (a handoff belongs to the episode
    in which its next owner was assigned)."""
    found = clusters(events, gap_s)
    # Handoffs by assignment time, so each cluster finds its own by bisection: a group's
    # history holds thousands of episodes and handoffs, and a scan per cluster grew with their product.
    by_time = sorted(handoffs, key=lambda h: h["assigned_ms"])
    times = [h["assigned_ms"] for h in by_time]
    episodes, owner_of = [], {}
    for i, cluster in enumerate(found):
        start, end = cluster[0]["event_time_ms"], cluster[-1]["event_time_ms"]
        episode_id = f"{cluster[0]['group_id']}@{cluster[0]['event_id']}"
        mine = by_time[bisect.bisect_left(times, start):bisect.bisect_right(times, end)]
        for h in mine:
            owner_of[h["handoff_id"]] = episode_id
        generations = [e["generation"] for e in cluster if e["kind"] == "partitions_assigned" and e["generation"] >= 0]
        bodies = [(e, body_of(e)) for e in cluster]  # parsed once per episode: JSON parsing was most of this pass
        causes = causes_of(bodies, mine, first=i == 0)
        episodes.append({
            "episode_id": episode_id, "group_id": cluster[0]["group_id"], "start_ms": start, "end_ms": end,
            "duration_s": (end - start) / 1000.0,
            "generation_min": min(generations) if generations else None,
            "generation_max": max(generations) if generations else None,
            "members": sorted({e["agent_id"] for e in cluster}),
            "members_joined": sorted({e["agent_id"] for e, b in bodies
                                      if e["kind"] == "member_config" and b["reason"] == "start"}),
            "members_left": sorted({e["agent_id"] for e, b in bodies if e["kind"] == "state_transition"
                                    and b["to_state"] in LEAVING_STATES}
                                   | {h["prev_agent_id"] for h in mine if h["release_kind"] == "crash"}),
            "partitions_moved": len(mine), "partitions_lost": sum(h["release_kind"] != "revoked" for h in mine),
            "events": len(cluster), "cause": causes[0], "causes": causes,
        })
    return episodes, owner_of
