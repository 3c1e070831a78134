"""Gold from both sources, per group: the agent path's outputs (``group_pass.group_gold``) with the
broker's history priced beside them, merged, and said where each figure came from.

Plain rows in, plain rows out (the gold stage calls ``with_broker`` per group in Spark's Python
workers). ``BrokerHistory`` is one group's rows as the broker stage lands them
(``pipelines.broker_log``: ownership changes, the commits kept, the log ends looked up, classic
generations, KIP-848 events). Without it (no broker source, or a group the tail has not seen) every
row is the agent's (``source`` agent) and coverage is the agent's alone.

- **handoffs**: ``broker_merge.merge_handoffs`` (the agent's figures win; the broker adds the owners
  the agent did not see, the stop windows, the estimates, the causes the agent lacked);
- **episodes**: the agent's, ``source`` both when the broker saw their handoffs too; a broker-only
  handoff inside an agent episode's span joins it; the rest cluster into episodes of their own
  (``source`` broker), split by ``gap_s`` as the agent's are, caused by their handoffs' first cause;
- **coverage**, two figures per group and hour: ``covered_s`` (the agent's members: seen exactly)
  and ``broker_covered_s`` (every member's tenure the log shows, from its assignment to its
  partition's next change); ``owned_s`` is ``covered_s`` plus the tenures of the members without
  the agent, or the agent's estimate where larger;
- **agreement** (``gold/source_agreement``): the checks of the handoffs both saw.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from pipelines.gold.broker_causes import broker_causes
from pipelines.gold.broker_handoffs import broker_handoffs
from pipelines.gold.broker_merge import agreement, merge_handoffs
from pipelines.gold.causes import RANK, first_cause
from pipelines.gold.rebalance_phases import NO_PHASES
from pipelines.gold.unseen import _by_hour

HANDOFFS, EPISODES, MEMBERS, PHASES, COVERAGE = range(5)  # group_gold's outputs, in order
# The gold stage's group pass reads a group's broker history as rows of these columns of its input
# (``pipelines.gold.broker_input``), one kind of row per column, by ``BrokerHistory`` field; and its
# last record's time (``silver/broker_state``'s ``through_ms``) in ``END_COLUMN``.
HISTORY_COLUMNS = {"changes": "broker_change", "commits": "broker_commit", "log_ends": "broker_log_end",
                   "generations": "broker_generation", "events": "broker_event"}
END_COLUMN = "broker_end_ms"


@dataclass(frozen=True)
class BrokerHistory:
    """One group's history from the broker's log (the broker stage's rows, ``pipelines.broker_log``)."""

    changes: list[dict[str, Any]]
    commits: list[dict[str, Any]]
    log_ends: list[dict[str, Any]]
    generations: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    end_ms: int | None = None  # the group's last record read (a tenure still open ends here)


def _log_order(row: dict[str, Any]) -> tuple[int, int]:
    return row.get("offsets_partition") or 0, row.get("offset") or 0


def history_of(rows: list[dict[str, Any]]) -> BrokerHistory | None:
    """One group's ``BrokerHistory`` from the group pass's rows (``HISTORY_COLUMNS``, each history row in
    log order); None when the broker's log never showed the group (no ``END_COLUMN``)."""
    end = next((r[END_COLUMN] for r in rows if r.get(END_COLUMN) is not None), None)
    if end is None:
        return None
    of = {field: sorted((r[column] for r in rows if r.get(column) is not None), key=_log_order)
          for field, column in HISTORY_COLUMNS.items()}
    return BrokerHistory(**of, end_ms=end)


def priced(history: BrokerHistory, cluster_id: str) -> list[dict[str, Any]]:
    """The group's handoffs as the broker's log prices and explains them."""
    rows = broker_handoffs(history.changes, history.commits, history.log_ends, cluster_id)
    broker_causes(rows, history.generations, history.events, history.changes, history.commits)
    return rows


def tenures(history: BrokerHistory) -> list[tuple[str, int, int]]:
    """(owner, from ms, to ms) of every tenure the log shows, each from its assignment to its
    partition's next change (or the group's last record; a partition's first change carries the
    tenure before it)."""
    by_tp: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for c in sorted(history.changes, key=lambda c: (c["at_ms"], c["offsets_partition"], c["offset"])):
        by_tp.setdefault((c["topic"] or c["topic_id"], c["partition"]), []).append(c)
    end = history.end_ms or max((c["at_ms"] for c in history.changes), default=0)
    spans = []
    for changes in by_tp.values():
        first = changes[0]
        if first["previous_owner"] is not None and first["previous_since_ms"] is not None:  # a tenure before it
            spans.append((first["previous_owner"], first["previous_since_ms"], first["at_ms"]))
        for c, nxt in zip(changes, [*changes[1:], None]):
            if c["owner"] is not None:
                spans.append((c["owner"], c["at_ms"], max(c["at_ms"], nxt["at_ms"] if nxt else end)))
    return spans


def broker_covered_by_hour(history: BrokerHistory, agent_members: Collection[str] = ()
                           ) -> tuple[dict[int, float], dict[int, float]]:
    """hour start (ms) -> the partition-seconds of ownership the log shows: every member's, and those
    of the members without the agent (owners not in ``agent_members``)."""
    spans = tenures(history)
    plain = [(start, end) for owner, start, end in spans if owner not in agent_members]
    return dict(_by_hour([(start, end) for _, start, end in spans])), dict(_by_hour(plain))


def _with_coverage(coverage: list[dict[str, Any]],
                   broker: tuple[dict[int, float], dict[int, float]] | None) -> list[dict[str, Any]]:
    """The agent's coverage rows with the broker's: ``owned_s`` is what the agent's members held
    (exact) and what the others held as the log shows it (their tenures), or the agent's estimate
    where larger (hours before the tail). Tenures are not read time (they run from one change to the
    next, through a round and a static member's absence), so the agent's members' own are not mixed in."""
    if broker is None:
        return [{**c, "broker_covered_s": None} for c in coverage]
    every, plain = broker
    agent = {c["hour_start_ms"]: c for c in coverage}
    rows = []
    for hour in sorted({*agent, *every}):
        covered = agent.get(hour, {}).get("covered_s", 0.0)
        owned = max(agent.get(hour, {}).get("owned_s", 0.0), covered + plain.get(hour, 0.0))
        rows.append({"hour_start_ms": hour, "covered_s": covered, "owned_s": round(owned, 3),
                     "broker_covered_s": round(every.get(hour, 0.0), 3)})
    return rows


def _broker_episode(moved: list[dict[str, Any]], cluster_id: str, group_id: str) -> dict[str, Any]:
    """An episode of handoffs only the broker saw (no agent event to time its phases)."""
    start, end = min(h["assigned_ms"] for h in moved), max(h["assigned_ms"] for h in moved)
    generations = [h["generation"] for h in moved if h["generation"] is not None]
    causes = sorted({h["cause"] or "unknown" for h in moved}, key=RANK.__getitem__)
    return {"episode_id": f"{group_id}@{moved[0]['handoff_id']}", "cluster_id": cluster_id, "group_id": group_id,
            "start_ms": start, "end_ms": end, "duration_s": (end - start) / 1000.0,
            "generation_min": min(generations, default=None), "generation_max": max(generations, default=None),
            "members": sorted({m for h in moved for m in (h["prev_member_id"], h["next_member_id"]) if m}),
            "members_joined": [], "members_left": [], "partitions_moved": len(moved), "partitions_lost": 0,
            "events": 0, "cause": first_cause(causes), "causes": causes, **NO_PHASES, "source": "broker"}


def _episodes(episodes: list[dict[str, Any]], handoffs: list[dict[str, Any]], gap_s: float, cluster_id: str,
              group_id: str) -> list[dict[str, Any]]:
    """The agent's episodes with their source, and episodes of the broker-only handoffs outside them
    (each handoff's ``episode_id`` set)."""
    spans = sorted((e["start_ms"], e["end_ms"], e) for e in episodes)
    loose = []
    for h in handoffs:
        if h["source"] == "agent" or h["episode_id"] is not None:
            continue
        inside = next((e for s, t, e in spans if s - gap_s * 1000 <= h["assigned_ms"] <= t + gap_s * 1000), None)
        if inside is None:
            loose.append(h)
        else:
            h.update(episode_id=inside["episode_id"], episode_start_ms=inside["start_ms"])
    touched = {h["episode_id"] for h in handoffs if h["source"] != "agent"}
    out = [{**e, "source": "both" if e["episode_id"] in touched else "agent"} for e in episodes]
    clusters: list[list[dict[str, Any]]] = []
    for h in sorted(loose, key=lambda h: h["assigned_ms"]):
        if clusters and h["assigned_ms"] - clusters[-1][-1]["assigned_ms"] <= gap_s * 1000:
            clusters[-1].append(h)
        else:
            clusters.append([h])
    for moved in clusters:
        episode = _broker_episode(moved, cluster_id, group_id)
        out.append(episode)
        for h in moved:
            h.update(episode_id=episode["episode_id"], episode_start_ms=episode["start_ms"])
    return out


def with_broker(outputs: tuple[list[dict[str, Any]], ...], history: BrokerHistory | None, gap_s: float,
                cluster_id: str, group_id: str,
                agent_members: Collection[str] = ()) -> tuple[list[dict[str, Any]], ...]:
    """``group_gold``'s outputs (handoffs, episodes, members, phases, coverage) with the broker's history
    merged in (the module docstring), and the group's agreement rows after them; ``agent_members``: the
    member ids the agent's ownership intervals name."""
    broker = priced(history, cluster_id) if history is not None else []
    # a broker-only row stored by an earlier run comes back with the stored handoffs: it is priced afresh
    agent = [h for h in outputs[HANDOFFS] if h.get("source") != "broker"]
    handoffs, checks = merge_handoffs(agent, broker)
    episodes = _episodes(outputs[EPISODES], handoffs, gap_s, cluster_id, group_id)
    coverage = _with_coverage(outputs[COVERAGE],
                              broker_covered_by_hour(history, agent_members) if history is not None else None)
    return handoffs, episodes, outputs[MEMBERS], outputs[PHASES], coverage, agreement(cluster_id, group_id, checks)
