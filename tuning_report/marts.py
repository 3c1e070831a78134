"""The report's data: the SQL marts of a lake, read with polars (no JVM, milliseconds), so
the report shows the figures a dashboard over the same marts shows."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property
from pathlib import Path

import polars as pl

from lens_runtime.errors import LensError

# mart -> the column that places its rows in time (None: not filtered by --since)
MARTS: dict[str, str | None] = {
    "group_daily_costs": "day", "group_cause_costs": None, "member_costs": None, "host_costs": None,
    "config_comparison": None, "open_recommendations": None, "rebalance_episodes": "started_at",
    "episode_handoffs": "released_at", "commit_on_revoke_daily": "day", "recommendation_checks": "verified_at",
    "group_protocol_phases": "started_at", "fleet_group_costs": None, "source_agreement": None,
}
FLEET = "fleet_group_costs"  # every group the lake knows, ranked costliest first (cost_rank)


Group = tuple[str, str]  # (cluster_id, group_id): one group name on two clusters is two groups
GROUP_KEY = ["cluster_id", "group_id"]


@dataclass(frozen=True)
class Fleet:
    """Each mart's rows for the groups in the report, one frame per mart."""

    frames: dict[str, pl.DataFrame]

    def __getitem__(self, mart: str) -> pl.DataFrame:
        return self.frames[mart]

    @cached_property
    def _ranked(self) -> list[Group]:
        """The groups of the fleet mart by its cost_rank, then any other group with costs or recommendations
        in the report's window (a lake built before the fleet mart: by duplicates, worst first)."""
        daily = self["group_daily_costs"].group_by(GROUP_KEY).agg(pl.col("duplicates").sum(),
                                                                   pl.col("pause_s").sum())
        ranked = self.frames.get(FLEET)
        first = ([] if ranked is None else
                 [(c, g) for c, g in ranked.sort("cost_rank").select(GROUP_KEY).iter_rows()])
        named = ({(c, g) for c, g in daily.select(GROUP_KEY).iter_rows()}
                 | set(self["open_recommendations"].select(GROUP_KEY).iter_rows())) - set(first)
        order = {(c, g): (-d, -p) for c, g, d, p in daily.iter_rows()}
        return first + sorted(named, key=lambda g: (order.get(g, (0, 0)), g))

    @cached_property
    def _names(self) -> Counter[str]:
        return Counter(name for _, name in self._ranked)

    def groups(self) -> list[Group]:
        """Every group, costliest first (the fleet mart's cost_rank)."""
        return list(self._ranked)

    def name_of(self, group: Group) -> str:
        """The group's name as the page shows it: its group id, with its cluster when another
        cluster has a group of that name."""
        cluster, name = group
        if self._names[name] == 1:
            return name
        return f"{name} (cluster {cluster or 'not reported'})"

    def of(self, mart: str, group: Group) -> pl.DataFrame:
        return self[mart].filter((pl.col("cluster_id") == group[0]) & (pl.col("group_id") == group[1]))


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """``--since``: an ISO date or time (UTC unless it says otherwise), or an age such as
    ``36h`` or ``7d``."""
    if not text:
        return None
    now = now or datetime.now(timezone.utc)
    age = re.fullmatch(r"(\d+)\s*([hd])", text.strip())
    if age:
        return now - timedelta(**{"hours" if age[2] == "h" else "days": int(age[1])})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise LensError(f"--since {text!r}: give an ISO date or time (2026-11-24, 2026-11-24T08:00) "
                        f"or an age (36h, 7d)") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def read_fleet(lake_path: str, group: str | None = None, since: datetime | None = None) -> Fleet:
    """The marts of ``lake_path`` (built by ``sql build``), for one group or all, from ``since`` on."""
    root = Path(lake_path) / "marts"
    missing = [m for m in MARTS if not (root / m / "_delta_log").is_dir()]
    if missing:
        raise LensError(f"no SQL marts in {root} ({', '.join(missing)} missing): "
                        f"run `rebalance-lens sql build --lake {lake_path}` first")
    frames = {}
    for mart, when in MARTS.items():
        scan = pl.scan_delta(str(root / mart))
        if group is not None:
            scan = scan.filter(pl.col("group_id") == group)
        if since is not None and when is not None:
            bound = since.date() if when == "day" else since
            scan = scan.filter(pl.col(when) >= bound)
        frames[mart] = scan.collect()
    fleet = Fleet(frames)
    if group is not None and not fleet.groups():
        raise LensError(f"--group {group!r}: no such group in {root} (the report lists the groups it has "
                        f"without --group)")
    return fleet
