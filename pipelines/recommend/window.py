"""The window a group is judged on: its gold over the last ``recommend_window_h`` hours up to its
last event (``pipelines.policy.DEFAULT_WINDOW_H`` unless the pipeline's settings say otherwise).

A configuration change is judged on what the group does now (a week holds its daily deploys
and weekday patterns), and the window bounds what one worker holds and replays whatever the
group's age. ``SINCE`` names, per gold source, the time a row belongs to the window by (the
first non-null of its columns at or after the window's start; a row without one, e.g. an
interval still held, is in it); the stage filters by it in Spark, before rows reach a Python
worker, and ``judged`` by the same table in the pure pass. A member that joined before the
window starts is taken as one that formed the group at its start, with the subscription it
had then: the replay starts from the group as it stood.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Rows = dict[str, list[dict[str, Any]]]  # gold source name -> the group's rows

SINCE: dict[str, tuple[str, ...]] = {
    "members": ("last_seen_ms",),
    "handoffs": ("revoke_ms", "assigned_ms"),
    "episodes": ("end_ms",),
    "intervals": ("released_ms",),
    "coverage": ("hour_end_ms",),
}


def length_ms(window_h: float) -> int:
    """The window's length in milliseconds (``recommend_window_h`` is in hours)."""
    return round(window_h * 3_600_000)


def start_of(members: list[dict[str, Any]], window_ms: int,
             handoffs: Sequence[dict[str, Any]] = ()) -> int | None:
    """The window's start: ``window_ms`` before the group's last event, or its last handoff where no member
    with the agent showed (a group only the broker sees); None: neither."""
    if members:
        return max(m["last_seen_ms"] for m in members) - window_ms
    times = [t for h in handoffs if (t := next((h[c] for c in SINCE["handoffs"] if h.get(c) is not None), None))]
    return max(times) - window_ms if times else None


def _in(row: dict[str, Any], columns: tuple[str, ...], start_ms: int) -> bool:
    at = next((row[c] for c in columns if row.get(c) is not None), None)
    return at is None or at >= start_ms


def as_of(member: dict[str, Any], start_ms: int) -> dict[str, Any]:
    """``member`` as the window sees it: one that joined before ``start_ms`` formed the group then."""
    if member["joined_ms"] >= start_ms:
        return member
    subscriptions = member["subscriptions"]
    then = [s for s in subscriptions if s["at_ms"] <= start_ms][-1:] or subscriptions[:1]
    return {**member, "joined_ms": start_ms, "join_cause": "start",
            "subscriptions": [{**s, "at_ms": start_ms} for s in then]
            + [s for s in subscriptions if s["at_ms"] > start_ms],
            "stalls": [s for s in member["stalls"] if s["back_ms"] is None or s["back_ms"] >= start_ms],
            "enforced_ms": [t for t in member["enforced_ms"] if t >= start_ms]}


def judged(of: Rows, window_ms: int) -> Rows:
    """The group's rows in its window, members as of its start."""
    start = start_of(of["members"], window_ms, of["handoffs"])
    if start is None:
        return of
    kept = {source: [r for r in rows if _in(r, SINCE[source], start)] for source, rows in of.items()}
    kept["members"] = [as_of(m, start) for m in kept["members"]]
    return kept
