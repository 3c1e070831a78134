"""The agent's handoffs and the broker's in one table, each row saying where its figures came from.

Plain rows in, plain rows out, per group: the agent path's ``gold/handoffs`` rows (``handoffs``,
``unseen``, with causes) and the broker's (``broker_handoffs``, ``broker_causes``). A handoff both
saw is one row, ``source`` "both": the same partition, its previous and next owners' member ids
(where the agent names them: an unseen owner's part takes the broker's member), assignments within
``MATCH_WINDOW_MS`` (the agent's is the new owner's callback, the broker's its record).

- **The agent's figures win**: an exact one stays as it is; bounds of both narrow to their overlap;
  duplicates the agent counts at a later owner (its next owner read nothing: ``deferred``) stay there.
  The broker adds what the agent cannot see: the unseen owner's member id, the stop window, the
  estimates, a cause where the agent had none (``unseen_member``, ``unknown``).
- **The broker's bounds must contain the agent's figures.** Each figure both have is checked
  (within ``AGREEMENT_SLACK`` of the two clocks' rounding); one outside is kept as the agent saw it
  and counted in ``agreement`` (``gold/source_agreement``): never hidden, never averaged away.
- A handoff only one saw keeps its own source: ``agent`` (a group read without the broker source,
  or before its tail) or ``broker`` (a member without the agent: the bounds, the causes of the log).
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pipelines.measures import upper_name

MATCH_WINDOW_MS = 30_000
# The slack of a figure's check: the log's and the agent's clocks are read in whole milliseconds.
AGREEMENT_SLACK = {"duplicates": 0, "pause_s": 0.005}
FIGURES = tuple(AGREEMENT_SLACK)
# What only the broker knows of a handoff both saw.
BROKER_ONLY = ("stopped_after_ms", "stopped_by_ms")
# Each figure's estimate and its interval (catalog.ESTIMATES), per figure.
ESTIMATES_OF = {"duplicates": ("duplicates_estimate", "duplicates_estimate_low", "duplicates_estimate_high"),
                "pause_s": ("pause_estimate_s", "pause_estimate_low_s", "pause_estimate_high_s")}
# Agent causes that say the agent did not see why: the log's cause replaces them.
UNSEEN_CAUSES = ("unseen_member", "unknown")


@dataclass(frozen=True)
class Check:
    """One figure of a handoff both saw: the agent's range, the broker's bounds, and whether they agree."""

    handoff_id: str
    figure: str
    agent: tuple[float | None, float | None]
    broker: tuple[float | None, float | None]

    @property
    def outside_by(self) -> float:
        """How far the agent's range lies outside the broker's bounds: an exact figure outside them, or
        bounds that do not overlap them (0: they agree, or there is nothing to check)."""
        (a_low, a_high), (b_low, b_high) = self.agent, self.broker
        if a_low is None:
            return 0.0
        slack = AGREEMENT_SLACK[self.figure]
        below = b_low - slack - a_high if None not in (b_low, a_high) else 0
        above = a_low - b_high - slack if b_high is not None else 0
        return float(max(0, below, above))


def _same(agent_id: str | None, broker_id: str | None) -> bool:
    """An agent's member id matches the broker's, or the agent did not see that owner (an unseen part)."""
    return agent_id is None or agent_id == broker_id


def matches(agent: list[dict[str, Any]], broker: list[dict[str, Any]]) -> list[tuple[dict | None, dict | None]]:
    """Pairs (agent row, broker row) of one group; None on the side that did not see the handoff."""
    by_tp: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for b in sorted(broker, key=lambda b: b["assigned_ms"]):
        by_tp[(b["topic"], b["partition"])].append(b)
    taken: set[int] = set()
    pairs: list[tuple[dict | None, dict | None]] = []
    for a in sorted(agent, key=lambda a: a["assigned_ms"]):
        mine = by_tp.get((a["topic"], a["partition"]), [])
        i = bisect.bisect_left(mine, a["assigned_ms"] - MATCH_WINDOW_MS, key=lambda b: b["assigned_ms"])
        near = [b for b in mine[i:] if abs(b["assigned_ms"] - a["assigned_ms"]) <= MATCH_WINDOW_MS
                and id(b) not in taken and _same(a["prev_member_id"], b["prev_member_id"])
                and _same(a["next_member_id"], b["next_member_id"])]
        best = min(near, key=lambda b: abs(b["assigned_ms"] - a["assigned_ms"]), default=None)
        if best is not None:
            taken.add(id(best))
        pairs.append((a, best))
    return pairs + [(None, b) for b in broker if id(b) not in taken]


def _narrowed(agent: dict[str, Any], broker: dict[str, Any], figure: str) -> tuple[Any, Any]:
    """The agent's (figure, upper): as it is when exact or outside the broker's bounds, else the overlap."""
    upper = upper_name(figure)
    low, high = agent[figure], agent[upper]
    if low is not None and low == high:
        return low, high
    candidates_low = [v for v in (low, broker[figure]) if v is not None]
    candidates_high = [v for v in (high, broker[upper]) if v is not None]
    new_low = max(candidates_low) if candidates_low else None
    new_high = min(candidates_high) if candidates_high else None
    if None not in (new_low, new_high) and new_low > new_high:
        return low, high
    return new_low, new_high


def _estimated(agent: dict[str, Any], broker: dict[str, Any], row: dict[str, Any], figure: str) -> None:
    """``row``'s estimate of ``figure``: the figure where it is exact, the agent's where its owner crashed
    (its pace is measured), else the broker's where the log says when the owner stopped; held within
    the narrowed bounds."""
    names = ESTIMATES_OF[figure]
    low, high = row[figure], row[upper_name(figure)]
    if low is not None and low == high:  # exact: the figure is its own estimate
        row.update(dict.fromkeys(names, low))
        return
    source = agent if agent.get("release_kind") == "crash" or broker[names[0]] is None else broker
    for name in names:
        value = source.get(name)
        if value is not None:
            value = max(value, low) if low is not None else value
            value = min(value, high) if high is not None else value
        row[name] = value


def deferred(agent: dict[str, Any], figure: str) -> bool:
    """The agent counts this handoff's duplicates at the first owner after it that reads: its next
    owner, which runs the agent, read nothing (a link of a chain, or given the partition as the run
    ended). The broker's bounds would count them twice, or where none happened."""
    return (figure == "duplicates" and agent.get("next_agent_id") is not None and agent.get("first_fetch_ms") is None
            and agent["duplicates"] is None)


def merged(agent: dict[str, Any], broker: dict[str, Any]) -> tuple[dict[str, Any], list[Check]]:
    """The row of a handoff both saw, and the checks of its figures (the module docstring)."""
    row = {**agent, "source": "both", **{k: broker[k] for k in BROKER_ONLY}}
    for side in ("prev_member_id", "next_member_id"):
        row[side] = agent[side] or broker[side]
    checks = []
    for figure in FIGURES:
        upper = upper_name(figure)
        checks.append(Check(agent["handoff_id"], figure, (agent[figure], agent[upper]),
                            (broker[figure], broker[upper])))
        if deferred(agent, figure):
            continue
        row[figure], row[upper] = _narrowed(agent, broker, figure)
        _estimated(agent, broker, row, figure)
    if agent.get("cause") in UNSEEN_CAUSES and broker.get("cause"):
        row["cause"], row["cause_confidence"] = broker["cause"], broker["cause_confidence"]
    else:
        row["cause_confidence"] = agent.get("cause_confidence") or "exact"
    return row, checks


def merge_handoffs(agent: list[dict[str, Any]], broker: list[dict[str, Any]]
                   ) -> tuple[list[dict[str, Any]], list[Check]]:
    """One group's handoffs from both sources (each with its ``source``), and the checks of those both saw."""
    rows, checks = [], []
    for a, b in matches(agent, broker):
        if a is not None and b is not None:
            row, mine = merged(a, b)
            rows.append(row)
            checks += mine
        else:
            only = a if a is not None else b
            rows.append({**only, "source": "agent" if a is not None else "broker",
                         "cause_confidence": only.get("cause_confidence") or ("exact" if a is not None else None)})
    return rows, checks


def agreement(cluster_id: str, group_id: str, checks: list[Check]) -> list[dict[str, Any]]:
    """``gold/source_agreement`` rows of one group: per figure, the handoffs both saw with that figure
    known to both, how many of the agent's fell outside the broker's bounds, and by how much at most."""
    out = []
    for figure in FIGURES:
        mine = [c for c in checks if c.figure == figure and c.agent[0] is not None and c.broker[0] is not None]
        outside = [c.outside_by for c in mine if c.outside_by > 0]
        out.append({"cluster_id": cluster_id, "group_id": group_id, "figure": figure, "handoffs": len(mine),
                    "outside": len(outside), "most_outside": max(outside, default=0.0)})
    return out
