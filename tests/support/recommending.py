"""A small fleet's recommendations, through gold's pure group pass and the recommend pass."""
from __future__ import annotations

from lens_scenarios.synthetic import Fleet
from pipelines.recommend.group_pass import recommend_group
from tests.support.reference_ownership import gold_of_group


def recommend_fleet(fleet: Fleet) -> tuple[list[dict], list[dict]]:
    """(what-if rows, recommendation rows) of the fleet's one group."""
    intervals, handoffs, episodes, members = gold_of_group(fleet.events, gap_s=10.0)
    rows = [{"cluster_id": "", "group_id": fleet.group, "source": source, source: row}
            for source, rows in (("members", members), ("handoffs", handoffs), ("episodes", episodes),
                                 ("intervals", intervals)) for row in rows]
    return recommend_group(rows, "/lake")
