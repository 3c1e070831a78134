"""What follows from a group's rebalances: each handoff's cause and episode, the episodes,
the members.

Pure Python, so it can be tested without Spark. The gold stage runs ``group_gold`` in
Spark's Python workers, one call per group, on the group's rebalance events (a small share
of its telemetry) and its handoffs, after the per-partition ownership fold
(``pipelines.gold.ownership``) has found the handoffs. This package's pure modules import
nothing beyond the standard library, orjson, the contract and the catalog, so the workers
need no Spark-side extras.

The pass reads each event's body once (``rebalance_bodies``) and finds the group's triggers
once (``causes.triggers_of``); episodes and members both read those. Parsing the JSON bodies
was most of this pass's time, and the two used to parse and classify them each on their own.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from pipelines.gold.causes import Bodies, triggers_of
from pipelines.gold.episodes import CLUSTER_KINDS, episodes_of
from pipelines.gold.horizon import coverage_from, horizon
from pipelines.gold.members import KINDS as MEMBER_KINDS, members_of
from pipelines.gold.protocol_phases import protocol_phases
from pipelines.gold.unseen import coverage_by_hour, rounds_of, split

# What the pass reads of each ownership interval (``catalog.OWNERSHIP``).
INTERVAL_FIELDS = ("cluster_id", "group_id", "assign_event_id", "topic", "partition", "agent_id", "member_id",
                   "assigned_ms",
                   "release_kind", "released_ms", "release_event_id", "callback_ms", "commit_in_revoke",
                   "last_processed_at_release", "committed_at_release", "committed_max", "generation",
                   "first_fetch_ms", "first_fetch_offset", "first_fetch_window_ms", "first_fetch_timestamp_ms",
                   "next_assigned_ms", "position_at_release", "handed_out_at_release")
# The kinds of event the pass reads (what the stage keeps in ``catalog.REBALANCE_EVENTS``).
KINDS = frozenset(CLUSTER_KINDS | MEMBER_KINDS)


def order(event: dict[str, Any]) -> tuple[int, str, int]:
    """The order every pass reads a group's events and facts in."""
    return event["event_time_ms"], event["agent_id"], event["seq"]


def body_of(event: dict[str, Any]) -> dict[str, Any]:
    """The event's body as a dict. Events read from silver carry it as JSON text, parsed
    here by orjson: json.loads took 2.8 us a body against orjson's 0.8."""
    body = event["body"]
    return body if isinstance(body, dict) else orjson.loads(body)


def rebalance_bodies(events: Iterable[dict[str, Any]]) -> Bodies:
    """The group's events of ``KINDS`` in ``order``, each with its body parsed: the one parse of the pass."""
    return [(e, body_of(e)) for e in sorted(events, key=order) if e["kind"] in KINDS]


def group_gold(events: Iterable[dict[str, Any]], handoffs: list[dict[str, Any]], last_seen: dict[str, int],
               gap_s: float, intervals: list[dict[str, Any]], since_ms: int | None = None,
               window_ms: int | None = None) -> tuple[Any, ...] | None:
    """(handoffs with their cause and episode, episodes, members, protocol phases, coverage per hour, horizon)
    of one group, from its rebalance events (others are ignored), all its handoffs and ownership intervals
    (``INTERVAL_FIELDS`` of them), and when each agent was last seen. Handoffs across an owner
    without the agent come back split in two (``pipelines.gold.unseen``). ``since_ms``: a run going on from
    the group's fold state, the earliest event it folds again; then the handoffs and episodes come back
    from the group's horizon on (``pipelines.gold.horizon``; None: all of them, and no horizon).

    ``window_ms``: the handoffs and intervals are those ``pipelines.gold.pass_window`` reads from there on;
    then the coverage comes back from the window's hour on, or the pass gives None (the group must be
    read whole) when the window is not the group's horizon or an owner without the agent held a partition
    before that hour (its spans there follow from the whole group: the partitions' count, the heartbeat)."""
    bodies = rebalance_bodies(events)
    triggers = triggers_of(bodies)
    rounds = rounds_of(bodies, [t.time_ms for t in triggers])
    handoffs = split(handoffs, intervals, rounds)
    heartbeat_ms = max((b["heartbeat_interval_ms"] or 0 for e, b in bodies if e["kind"] == "member_config"), default=0)
    coverage = coverage_by_hour(intervals, handoffs, rounds, last_seen, heartbeat_ms)
    episodes, owner_of = episodes_of(bodies, triggers, handoffs, gap_s)
    of_id = {e["episode_id"]: e for e in episodes}
    for h in handoffs:
        episode = of_id.get(owner_of.get(h["handoff_id"]), {})
        h.update(episode_id=episode.get("episode_id"), episode_start_ms=episode.get("start_ms"))
    members = members_of(bodies, triggers, handoffs, last_seen)
    at = horizon(bodies, rounds, handoffs, members, since_ms, gap_s)
    if window_ms is not None:
        hour = coverage_from(window_ms)
        if at != window_ms or any(c["owned_s"] != c["covered_s"] for c in coverage if c["hour_start_ms"] < hour):
            return None
        coverage = [c for c in coverage if c["hour_start_ms"] >= hour]
    if at is not None:
        handoffs = [h for h in handoffs if h["assigned_ms"] >= at]
        episodes = [e for e in episodes if e["end_ms"] >= at]
    return handoffs, episodes, members, phase_rows(members), coverage, at


def phase_rows(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The group's ``protocol_phases`` as rows of ``catalog.PROTOCOL_PHASES``."""
    key = {c: members[0][c] for c in ("cluster_id", "group_id")} if members else {}
    return [{**key, "phase": p.phase, "start_ms": p.start_ms, "end_ms": p.end_ms} for p in protocol_phases(members)]
