"""What follows from a group's rebalances: each handoff's cause and episode, the episodes,
the members; and, for the tests and small inputs, the whole of gold from one group's events.

Pure Python, so it can be tested without Spark. The gold stage runs ``group_gold`` in
Spark's Python workers, one call per group, on the group's rebalance events (a small share
of its telemetry) and its handoffs, after the per-partition ownership fold
(``pipelines.gold.ownership``) has found the handoffs. This package's pure modules import
nothing beyond the standard library, orjson, the contract and the catalog, so the workers
need no Spark-side extras.
"""
from __future__ import annotations

from typing import Any

from pipelines.gold.episodes import episodes_of
from pipelines.gold.handoffs import handoffs_of
from pipelines.gold.members import members_of
from pipelines.gold.ownership import ownership_intervals


def group_gold(events: list[dict[str, Any]], handoffs: list[dict[str, Any]], last_seen: dict[str, int],
               gap_s: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(handoffs with their cause and episode, episodes, members) of one group, from its rebalance
    events (others are ignored), all its handoffs and when each agent was last seen."""
    episodes, owner_of = episodes_of(events, handoffs, gap_s)
    of_id = {e["episode_id"]: e for e in episodes}
    for h in handoffs:
        episode = of_id.get(owner_of.get(h["handoff_id"]), {})
        h.update(episode_id=episode.get("episode_id"), episode_start_ms=episode.get("start_ms"))
    return handoffs, episodes, members_of(events, handoffs, last_seen)


def gold_of_group(events: list[dict[str, Any]], gap_s: float) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """(ownership intervals, handoffs, episodes, members) of one group from all its events."""
    intervals = ownership_intervals(events)
    last_seen: dict[str, int] = {}
    for e in events:
        last_seen[e["agent_id"]] = max(e["event_time_ms"], last_seen.get(e["agent_id"], e["event_time_ms"]))
    handoffs, episodes, members = group_gold(events, handoffs_of(intervals), last_seen, gap_s)
    return intervals, handoffs, episodes, members
