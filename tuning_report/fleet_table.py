"""The fleet table: every group of the report as one row, costliest first, from the fleet mart
(``fleet_group_costs``): what it cost, how much of that is the agent's exact figures and how much the
broker's bounds, its two coverage figures and its top recommendation; and the fleet's agreement between the
two sources (``source_agreement``). Plain rows out, for the template; no chart, so a fleet of hundreds of
groups stays a page that opens at once."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tuning_report.marts import FLEET, GROUP_KEY, Fleet, Group
from tuning_report.wording import Headline

# The figures of a row of the fleet mart a lake built before it lacks (its groups read from the daily costs).
FROM_DAILY = ("rebalances", "duplicates", "duplicates_upper", "pause_s", "pause_upper_s", "coverage")


def _top_recommendations(fleet: Fleet) -> dict[Group, dict[str, Any]]:
    """Each group's first open recommendation (by rank)."""
    recs = fleet["open_recommendations"]
    if not recs.height:
        return {}
    first = recs.sort("rank").group_by(GROUP_KEY, maintain_order=True).first()
    return {(r["cluster_id"], r["group_id"]): r for r in first.iter_rows(named=True)}


def _from_daily(fleet: Fleet, group: Group) -> dict[str, Any]:
    """A group the fleet mart does not have (a lake built before it): its window's totals, the agent's."""
    head = Headline.of(fleet.of("group_daily_costs", group))
    return {"source": "agent", "handoffs": None, "broker_handoffs": 0, "broker_coverage": None,
            "duplicates_estimate": None, "pause_estimate_s": None,
            **{name: getattr(head, name) for name in FROM_DAILY}}


def fleet_rows(fleet: Fleet, anchors: dict[Group, str]) -> list[dict[str, Any]]:
    """One row per group, costliest first (``Fleet.groups``): the fleet mart's figures, its top recommendation,
    and the anchor of its section where it has one (``anchors``: the charted groups')."""
    ranked = fleet.frames.get(FLEET)
    by_group = ({} if ranked is None else
                {(r["cluster_id"], r["group_id"]): r for r in ranked.iter_rows(named=True)})
    top = _top_recommendations(fleet)
    rows = []
    for rank, group in enumerate(fleet.groups(), 1):
        row = dict(by_group.get(group) or _from_daily(fleet, group))
        row.update(rank=rank, name=fleet.name_of(group), anchor=anchors.get(group), top=top.get(group))
        rows.append(row)
    return rows


@dataclass(frozen=True)
class Agreement:
    """The broker's bounds against the agent's exact figures, over the handoffs both saw (one figure's)."""

    handoffs: int
    outside: int
    most_outside: float

    @classmethod
    def of(cls, rows: pl.DataFrame, figure: str) -> Agreement | None:
        """Summed over ``rows`` (``source_agreement``'s) of ``figure``; None when no handoff was seen by both."""
        mine = rows.filter(pl.col("figure") == figure)
        handoffs = int(mine["handoffs"].sum() or 0)
        if handoffs == 0:
            return None
        return cls(handoffs, int(mine["outside"].sum() or 0), float(mine["most_outside"].max() or 0.0))
