"""Where an incremental group pass may start writing: a group's horizon, or none (the group is written whole).

A run that goes on from a group's fold state refolds its events from ``since_ms`` (the state's
``before_ms``: every event at or after it is read again, a late one among them). What it computes
for handoffs and episodes well before that cannot change, so it writes those from the horizon on
and leaves the stored ones before it as they are (the writes cost what the new data costs, not
what the group's history costs).

The horizon is the start of a cluster of rebalance events (``episodes.clusters``: more than the
episode gap after the previous one) at least the gap and ``causes.RESTART_WINDOW_S`` before
``since_ms``. No round, episode or cooperative follow-up spans it (each is within the gap), no
event folded again reaches a trigger or a restart pairing before it, and every handoff and
episode from it on (each handoff at its next owner's assignment, each episode to its last event)
is recomputed whole. The group's members, protocol phases and coverage per hour are small and
always written whole.

What can still reach back across a horizon, and makes the group written whole:

- a round that spans it (a cluster of releases whose assignments came later);
- a stall reported before it that the member had not come back from by then (its return's
  trigger dates from the member's rejoin);
- a classic assignment from it on at a generation assigned before it (a static member back
  within its session: the old generation's span, and the causes its rounds took, grow);
- an owner without the agent seen for the first time from it on (the group's fallback cause
  turns from ``unknown`` to ``unseen_member``: ``causes.handoff_causes``);
- a part to or from an owner without the agent in the last round before it (an incremental
  group's later round is what shows a partition left to one: ``unseen._left_to_unseen``).

The metrics of the days from the earliest change on are recomputed from what is stored then
(``pipelines.gold.stage``).

Where the stage can tell a group's horizon before its pass (``pipelines.gold.pass_window``), the pass
reads the group's handoffs from it on only (its window), and its intervals from the start of its hour: the
pass gives the same rows from there on, and its coverage from that hour on (``coverage_from``).
"""
from __future__ import annotations

import bisect
from typing import Any

from pipelines.gold.causes import RESTART_WINDOW_S, Bodies
from pipelines.gold.episodes import clusters
from pipelines.gold.unseen import HOUR_MS, Round


def latest_start(since_ms: int, gap_s: float) -> int:
    """The latest a horizon can be: ``gap_s`` plus ``RESTART_WINDOW_S`` before ``since_ms``."""
    return since_ms - round((gap_s + RESTART_WINDOW_S) * 1000)


def coverage_from(window_ms: int) -> int:
    """The start of the hour a window starts in: a pass reading from ``window_ms`` on (the intervals from this
    hour on) gives the coverage from it on exactly, and the new events can change none before it."""
    return window_ms // HOUR_MS * HOUR_MS


def candidate(bodies: Bodies, since_ms: int, gap_s: float) -> int | None:
    """The latest cluster start at ``latest_start`` or before, other than the group's first (nothing would
    stay as it is); None when there is none."""
    limit = latest_start(since_ms, gap_s)
    starts = [c[0][0]["event_time_ms"] for c in clusters(bodies, gap_s)]
    i = bisect.bisect_right(starts, limit) - 1
    return starts[i] if i >= 1 else None


def _round_spans(rounds: list[Round], at_ms: int) -> bool:
    return any(r.start_ms < at_ms <= r.end_ms for r in rounds)


def _stall_pending(members: list[dict[str, Any]], at_ms: int) -> bool:
    return any(s["at_ms"] < at_ms and (s["back_ms"] is None or s["back_ms"] >= at_ms)
               for m in members for s in m["stalls"])


def _generation_again(bodies: Bodies, at_ms: int) -> bool:
    if not bodies or bodies[0][0]["group_protocol"] != "classic":
        return False
    assigned = [(e["event_time_ms"], e["generation"]) for e, _ in bodies
                if e["kind"] == "partitions_assigned" and e["generation"] >= 0]
    before = max((g for t, g in assigned if t < at_ms), default=-1)
    return any(g <= before for t, g in assigned if t >= at_ms)


def _unseen_first_after(handoffs: list[dict[str, Any]], at_ms: int) -> bool:
    unseen = [h["assigned_ms"] for h in handoffs if h.get("unseen_owner")]
    return bool(unseen) and min(unseen) >= at_ms


def _unseen_in_last_round(handoffs: list[dict[str, Any]], rounds: list[Round], at_ms: int) -> bool:
    k = bisect.bisect_left(rounds, at_ms, key=lambda r: r.end_ms) - 1  # the last round that ended before it
    return k >= 0 and any(h.get("unseen_owner") and rounds[k].start_ms <= h["assigned_ms"] < at_ms for h in handoffs)


def horizon(bodies: Bodies, rounds: list[Round], handoffs: list[dict[str, Any]], members: list[dict[str, Any]],
            since_ms: int | None, gap_s: float) -> int | None:
    """The group's horizon (the module docstring), or None: written whole. ``handoffs`` after the unseen
    split, ``members`` as ``members.members_of`` gives them."""
    if since_ms is None:
        return None
    at = candidate(bodies, since_ms, gap_s)
    if at is None or _round_spans(rounds, at) or _stall_pending(members, at) or _generation_again(bodies, at) \
            or _unseen_first_after(handoffs, at) or _unseen_in_last_round(handoffs, rounds, at):
        return None
    return at
