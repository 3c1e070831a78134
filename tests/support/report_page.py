"""The report's page over one group, from rows as the marts hold them: no lake, no Spark."""
from __future__ import annotations

from datetime import date
from typing import Any

import polars as pl

from tuning_report.marts import Fleet
from tuning_report.page import render


def page_of(recommendations: list[dict[str, Any]], configs: list[dict[str, Any]] | None = None) -> str:
    """The page of one group whose open recommendations are ``recommendations`` and whose what-if
    rows (``config_comparison``) are ``configs``; the other marts empty but for a day of costs."""
    key = {"cluster_id": recommendations[0]["cluster_id"], "group_id": recommendations[0]["group_id"]}
    daily = pl.DataFrame([{**key, "day": date(2026, 11, 25), "rebalances": 3, "duplicates": 50, "duplicates_upper": 80,
                           "pause_s": 70.0, "pause_upper_s": 90.0, "records_processed": 400,
                           "duplicates_change": None, "covered_s": 1.0, "owned_s": 1.0}])

    def empty(**columns: Any) -> pl.DataFrame:
        return pl.DataFrame(schema={"cluster_id": pl.String, "group_id": pl.String, **columns})

    compared = (pl.DataFrame(configs).with_columns(pl.col("predicted_duplicates").rank("min").alias("cost_rank"))
                if configs else empty())
    fleet = Fleet({"group_daily_costs": daily, "open_recommendations": pl.DataFrame(recommendations),
                   "group_cause_costs": empty(cause=pl.String, duplicates=pl.Int64, pause_s=pl.Float64),
                   "rebalance_episodes": empty(cause=pl.String, duplicates=pl.Int64, pause_s=pl.Float64),
                   "episode_handoffs": empty(), "group_protocol_phases": empty(), "config_comparison": compared,
                   "member_costs": empty(cost_rank=pl.Int64),
                   "host_costs": empty(duplicates=pl.Int64, pause_s=pl.Float64),
                   "recommendation_checks": empty(verified_at=pl.Datetime)})
    return render(fleet, "t", "all the data in the lake")
