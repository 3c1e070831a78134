"""One pass over a group's whole timeline: its ownership intervals, the handoffs between
them with their causes, and the rebalance episodes the handoffs belong to.

Pure Python over one group's events (dicts with the envelope and ``body``), so it can be
tested without Spark; the gold stage runs it in Spark's Python workers, one call per
group (``pipelines.gold.group_apply``). This package's pure modules import nothing beyond
the standard library, orjson, the contract and the catalog, so the workers need no
Spark-side extras.
"""
from __future__ import annotations

from pipelines.gold.episodes import episodes_of
from pipelines.gold.handoffs import handoffs_of
from pipelines.gold.members import members_of
from pipelines.gold.ownership import ownership_intervals


def gold_of_group(events: list[dict], gap_s: float) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """(ownership intervals, handoffs with their cause and episode, episodes, members) of one group,
    from all its events: one pass builds the three, so a group's events cross from the JVM
    to Python once (two passes, intervals then gold, cost 34.1 s against 27.0 s for one on
    2.5M events)."""
    intervals = ownership_intervals(events)
    handoffs = handoffs_of(intervals)
    episodes, owner_of = episodes_of(events, handoffs, gap_s)
    of_id = {e["episode_id"]: e for e in episodes}
    for h in handoffs:
        episode = of_id.get(owner_of.get(h["handoff_id"]), {})
        h.update(episode_id=episode.get("episode_id"), episode_start_ms=episode.get("start_ms"))
    return intervals, handoffs, episodes, members_of(events, handoffs)
