"""A group is (cluster_id, group_id): the report and `recommend` keep one name on two clusters
apart, and name the cluster only where a name is on more than one."""
from __future__ import annotations

import polars as pl
from rich.console import Console

from lens_cli.recommend_commands import print_table
from tuning_report.marts import Fleet


def test_one_name_on_two_clusters_is_two_sections_each_naming_its_cluster():
    daily = pl.DataFrame({"cluster_id": ["eu", "us", "eu"], "group_id": ["orders", "orders", "billing"],
                          "duplicates": [5, 9, 1], "pause_s": [1.0, 2.0, 0.5]})
    fleet = Fleet({"group_daily_costs": daily, "open_recommendations": pl.DataFrame(
        {"cluster_id": ["", "us"], "group_id": ["audit", "orders"]})})
    assert fleet.groups() == [("us", "orders"), ("eu", "orders"), ("eu", "billing"), ("", "audit")]
    assert [fleet.name_of(g) for g in fleet.groups()] == ["orders (cluster us)", "orders (cluster eu)", "billing",
                                                          "audit"]
    assert fleet.of("group_daily_costs", ("eu", "orders"))["duplicates"].to_list() == [5]


def test_recommend_prints_a_block_per_group_naming_the_cluster_of_a_shared_name():
    def row(cluster: str, group: str, rank: int) -> dict:
        return {"cluster_id": cluster, "group_id": group, "rank": rank, "title": f"{cluster}-{group}-{rank}",
                "confidence": "high", "predicted_duplicates_saved": None, "predicted_pause_saved_s": None,
                "config_change": [], "evidence": [], "tradeoff": None}

    console = Console(record=True, width=80)
    print_table([row("", "billing", 1), row("eu", "orders", 1), row("eu", "orders", 2), row("us", "orders", 1)],
                console)
    blocks = [line for line in console.export_text().splitlines() if line.startswith("group ")]
    assert blocks == ["group billing", "group orders (cluster eu)", "group orders (cluster us)"]
