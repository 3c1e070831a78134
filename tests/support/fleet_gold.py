"""Gold rows of a small fleet as the gold stage writes them with the broker source on (plain rows of the
catalog's tables): a group whose members all run the agent, one the agent and the broker both see, one only
the broker sees (its figures bounds, one pause still open), a quiet broker-only group, and one group id on
two clusters. What each fleet-view mart must make of them is written beside the rows."""
from __future__ import annotations

from typing import Any

from pipelines import catalog

HOUR_MS = 3_600_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def row(table: catalog.Table, **values: Any) -> dict[str, Any]:
    """A row of ``table`` with every declared column (null where not given)."""
    unknown = set(values) - set(table.column_names())
    if unknown:
        raise KeyError(f"{table.path} has no column {sorted(unknown)}")
    return {**dict.fromkeys(table.column_names()), **values}


def handoff(cluster: str, group: str, n: int, source: str, figures: tuple[Any, Any, Any, Any],
            estimates: tuple[Any, Any] = (None, None), cause: str = "restart") -> dict[str, Any]:
    """A handoff of the group's episode ``{group}-e``: ``figures`` (duplicates, duplicates_upper, pause_s,
    pause_upper_s), ``estimates`` (duplicates_estimate, pause_estimate_s)."""
    d, du, p, pu = figures
    return row(catalog.HANDOFFS, handoff_id=f"{cluster}/{group}/{n}", cluster_id=cluster, group_id=group,
               topic="t", partition=n, prev_agent_id=None if source == "broker" else f"{group}-a",
               next_agent_id=None if source == "broker" else f"{group}-b", release_kind="revoked",
               revoke_ms=T0 + 1000 * n, assigned_ms=T0 + 1000 * n + 500, duplicates=d, duplicates_upper=du,
               pause_s=p, pause_upper_s=pu, duplicates_estimate=estimates[0], pause_estimate_s=estimates[1],
               episode_id=f"{cluster}/{group}-e", episode_start_ms=T0, cause=cause, source=source,
               cause_confidence="probable" if source == "broker" else "exact",
               stopped_after_ms=T0 + 900 if source != "agent" else None,
               stopped_by_ms=T0 + 1900 if source != "agent" else None)


def episode(cluster: str, group: str, source: str) -> dict[str, Any]:
    return row(catalog.EPISODES, episode_id=f"{cluster}/{group}-e", cluster_id=cluster, group_id=group,
               start_ms=T0, end_ms=T0 + 30_000, duration_s=30.0, members=[], members_joined=[], members_left=[],
               partitions_moved=2, partitions_lost=0, events=0, cause="restart", causes=["restart"], source=source)


def coverage(cluster: str, group: str, covered_s: float, owned_s: float, broker_s: float | None,
             hours: int = 2) -> list[dict[str, Any]]:
    """``hours`` equal hours of the group's coverage; the figures are each hour's."""
    from datetime import datetime, timezone

    return [row(catalog.COVERAGE, cluster_id=cluster, group_id=group,
                hour_start=datetime.fromtimestamp((T0 + h * HOUR_MS) / 1000, timezone.utc),
                covered_s=covered_s, owned_s=owned_s, broker_covered_s=broker_s) for h in range(hours)]


def small_fleet() -> dict[catalog.Table, list[dict[str, Any]]]:
    """The fleet (module docstring), as rows per gold table."""
    handoffs = [
        # eu/orders: the agent's only, exact (the broker's coverage null, as where no broker source reads)
        handoff("eu", "orders", 0, "agent", (40, 40, 2.0, 2.0), (40, 2.0)),
        handoff("eu", "orders", 1, "agent", (10, 10, 1.0, 1.0), (10, 1.0)),
        # us/orders: the same group id on another cluster, cheap
        handoff("us", "orders", 0, "agent", (1, 1, 0.5, 0.5), (1, 0.5)),
        # eu/billing: one handoff both saw (the agent's exact figure), one only the broker saw (bounds)
        handoff("eu", "billing", 0, "both", (5, 5, 1.0, 1.0), (5, 1.0)),
        handoff("eu", "billing", 1, "broker", (0, 300, 0.5, 9.5), (120, 4.0)),
        # eu/audit: the broker's alone; the second pause still open (no upper bound), no estimate for it
        handoff("eu", "audit", 0, "broker", (0, 2000, 1.0, 30.0), (900, 12.0)),
        handoff("eu", "audit", 1, "broker", (2, 50, 3.0, None), (None, None)),
    ]
    episodes = [episode("eu", "orders", "agent"), episode("us", "orders", "agent"), episode("eu", "billing", "both"),
                episode("eu", "audit", "broker")]
    cover = [*coverage("eu", "orders", 100.0, 100.0, None), *coverage("us", "orders", 50.0, 50.0, None),
             *coverage("eu", "billing", 60.0, 100.0, 100.0), *coverage("eu", "audit", 0.0, 80.0, 80.0),
             *coverage("eu", "quiet", 0.0, 10.0, 10.0)]
    agreement = [row(catalog.SOURCE_AGREEMENT, cluster_id="eu", group_id="billing", figure="duplicates", handoffs=4,
                     outside=1, most_outside=3.0),
                 row(catalog.SOURCE_AGREEMENT, cluster_id="eu", group_id="billing", figure="pause_s", handoffs=4,
                     outside=0, most_outside=0.0)]
    return {catalog.HANDOFFS: handoffs, catalog.EPISODES: episodes, catalog.COVERAGE: cover,
            catalog.SOURCE_AGREEMENT: agreement}
