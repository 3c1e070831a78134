"""Rebalance episodes: one group's rebalance, with what caused it.

Events first cluster in time: each rebalance event (assign, revoke, lost, state
transitions, member configs, rebalance requests, poll-interval errors) follows the
previous one by at most ``gap_s`` seconds (a late event lands in the cluster its time
belongs to: the whole group is recomputed and replaced, so it can extend, merge or split
episodes). A busy fleet's rebalances come closer than any gap, so a cluster is then split
where the cause changes: each handoff has its own cause and rebalance round
(``pipelines.gold.causes``); consecutive rounds with the same cause form one episode, and
the next episode starts at the first release or trigger of a round with another cause.
The gap stays the fallback that separates rebalances with the same cause.

An episode's ``cause`` is the first of its handoffs' causes in ``PRECEDENCE`` order (of its
triggers' when no partition moved: a join that got nothing, a static member's return);
``causes`` are all of both; the group's first episode is ``start`` when nothing says otherwise.
A handoff belongs to the episode in which its next owner was assigned. Where its time went (join
and sync, callbacks, reconciliation) is ``pipelines.gold.rebalance_phases``'; an episode starts at its
first event, or earlier where a member's client timed a rebalance of it from before that (a crash's
survivors rejoin before they show anything).
"""
from __future__ import annotations

import bisect
import math
from typing import Any

from pipelines.gold.causes import POLL_EXCEEDED_ERROR, RANK, Bodies, Trigger, first_cause, handoff_causes, is_leave
from pipelines.gold.rebalance_phases import STARTED, episode_phases

CLUSTER_KINDS = {"partitions_assigned", "partitions_revoked", "partitions_lost", "state_transition",
                 "member_config", "rebalance_requested", "client_error"}


def is_rebalance_event(event: dict[str, Any], body: dict[str, Any]) -> bool:
    if event["kind"] == "client_error":
        return body["name"] == POLL_EXCEEDED_ERROR
    return event["kind"] in CLUSTER_KINDS


def clusters(bodies: Bodies, gap_s: float) -> list[Bodies]:
    """The rebalance events among ``bodies`` (events with their parsed bodies, in time order),
    split where two consecutive ones are more than ``gap_s`` apart."""
    out: list[Bodies] = []
    for e, b in bodies:
        if not is_rebalance_event(e, b):
            continue
        if out and e["event_time_ms"] - out[-1][-1][0]["event_time_ms"] <= gap_s * 1000:
            out[-1].append((e, b))
        else:
            out.append([(e, b)])
    return out


def _release_ms(h: dict[str, Any]) -> int:
    return h["revoke_ms"] if h["revoke_ms"] is not None else h["assigned_ms"]


def _split(bodies: Bodies, handoffs: list[dict[str, Any]], rounds: dict[str, tuple[str, Any]],
           triggers: list[Trigger]) -> list[tuple[Bodies, list[dict[str, Any]]]]:
    """One cluster (events with bodies, its handoffs by assignment time) cut where the cause changes."""
    runs: list[tuple[str, list[dict[str, Any]]]] = []  # (cause, handoffs) of consecutive rounds with one cause
    by_round: dict[Any, list[dict[str, Any]]] = {}
    for h in handoffs:
        by_round.setdefault(rounds[h["handoff_id"]][1], []).append(h)
    for moved in by_round.values():
        cause = first_cause(h["cause"] for h in moved)
        if runs and runs[-1][0] == cause:
            runs[-1][1].extend(moved)
        else:
            runs.append((cause, list(moved)))
    cuts = []
    for (_, before), (cause, moved) in zip(runs, runs[1:]):
        after = max(h["assigned_ms"] for h in before)
        starts = [_release_ms(h) for h in moved] + [t.time_ms for t in triggers
                                                     if t.cause == cause and t.time_ms > after]
        cuts.append(max(after + 1, min(starts)))
    if not cuts:
        return [(bodies, handoffs)]
    pieces: list[tuple[Bodies, list[dict[str, Any]]]] = [([], []) for _ in range(len(cuts) + 1)]
    for pair in bodies:
        pieces[bisect.bisect_right(cuts, pair[0]["event_time_ms"])][0].append(pair)
    for h in handoffs:
        pieces[bisect.bisect_right(cuts, h["assigned_ms"])][1].append(h)
    return [piece for piece in pieces if piece[0]]


def _episode(bodies: Bodies, moved: list[dict[str, Any]], triggers: list[Trigger], first: bool) -> dict[str, Any]:
    events = [e for e, _ in bodies]
    phases = episode_phases(bodies)
    started = phases.pop(STARTED)  # a rebalance the client timed from before anything of it was seen
    start, end = events[0]["event_time_ms"], events[-1]["event_time_ms"]
    start = min(start, math.floor(started)) if started is not None else start
    generations = [e["generation"] for e in events if e["kind"] == "partitions_assigned" and e["generation"] >= 0]
    moved_by = sorted({h["cause"] for h in moved}, key=RANK.__getitem__)
    seen = {t.cause for t in triggers if start <= t.time_ms <= end} | set(moved_by)
    causes = sorted(seen or {"start" if first else "unknown"}, key=RANK.__getitem__)
    return {
        "episode_id": f"{events[0]['group_id']}@{events[0]['event_id']}", "cluster_id": events[0]["cluster_id"],
        "group_id": events[0]["group_id"],
        "start_ms": start, "end_ms": end, "duration_s": (end - start) / 1000.0,
        "generation_min": min(generations) if generations else None,
        "generation_max": max(generations) if generations else None,
        "members": sorted({e["agent_id"] for e in events}),
        "members_joined": sorted({e["agent_id"] for e, b in bodies
                                  if e["kind"] == "member_config" and b["reason"] == "start"}),
        "members_left": sorted({e["agent_id"] for e, b in bodies if is_leave(e, b)}
                               | {h["prev_agent_id"] for h in moved if h["release_kind"] == "crash"}),
        "partitions_moved": len(moved), "partitions_lost": sum(h["release_kind"] != "revoked" for h in moved),
        "events": len(events), "cause": (moved_by or causes)[0], "causes": causes, **phases,
    }


def episodes_of(bodies: Bodies, triggers: list[Trigger], handoffs: list[dict[str, Any]],
                gap_s: float) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One group's episodes, and handoff_id -> episode_id; sets each handoff's ``cause``.
    ``bodies``: the group's events with their parsed bodies, in time order (other kinds are
    skipped); ``triggers``: ``causes.triggers_of(bodies)``."""
    found = clusters(bodies, gap_s)
    if not found:
        return [], {}
    rounds = handoff_causes([pair for cluster in found for pair in cluster], triggers, handoffs, gap_s)
    for h in handoffs:
        h["cause"] = rounds[h["handoff_id"]][0]
    # Handoffs by assignment time, so each cluster finds its own by bisection: a group's
    # history holds thousands of episodes and handoffs, and a scan per cluster grew with their product.
    by_time = sorted(handoffs, key=lambda h: h["assigned_ms"])
    times = [h["assigned_ms"] for h in by_time]
    trigger_times = [t.time_ms for t in triggers]
    episodes, owner_of = [], {}
    for i, cluster in enumerate(found):
        start, end = cluster[0][0]["event_time_ms"], cluster[-1][0]["event_time_ms"]
        mine = by_time[bisect.bisect_left(times, start):bisect.bisect_right(times, end)]
        near = triggers[bisect.bisect_left(trigger_times, start):bisect.bisect_right(trigger_times, end)]
        for piece, moved in _split(cluster, mine, rounds, near):
            episode = _episode(piece, moved, near, first=i == 0)
            episodes.append(episode)
            owner_of.update((h["handoff_id"], episode["episode_id"]) for h in moved)
    return episodes, owner_of
