"""The DAGs' shared scheduling: owner, retries with backoff, timeouts, and the asset the
hourly DAG updates and the daily DAG waits for.

Kept light (no Spark, no pipeline import): the DAG processor imports the DAG files, and so
this module, every time it parses them.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk import Asset

OWNER = "rebalance-lens"
TAGS = ["rebalance-lens", "kafka", "delta"]
START = datetime(2026, 1, 1, tzinfo=timezone.utc)

# A stage that fails is retried alone, at least 2, 4, 8 minutes later (Airflow adds jitter): a
# broker restarting, a Delta commit conflicting with the daily compaction. Then the run fails and
# the next hour's run picks up what it left (every stage is incremental from the lake's own marks).
DEFAULT_ARGS: dict[str, Any] = {
    "owner": OWNER,
    "retries": 3,
    "retry_delay": timedelta(minutes=2),
    "retry_exponential_backoff": 2.0,
    "max_retry_delay": timedelta(minutes=30),
    "execution_timeout": timedelta(minutes=45),
}
# Both DAGs: one run at a time (their runs write the same tables), no catch-up of the hours
# before a deployment (a backfill is asked for: `airflow backfill create`).
DAG_ARGS: dict[str, Any] = {"start_date": START, "catchup": False, "max_active_runs": 1, "default_args": DEFAULT_ARGS}
# The SQL build's fixed cost (~70 s) grows with the marts rebuilt; the daily maintenance
# rewrites every table once.
LONG_TASK_TIMEOUT = timedelta(minutes=90)

# The hourly DAG's sql task updates the marts; each update carries its hour as a partition key
# (the data interval's start in PARTITION_KEY_FORMAT, UTC), and the daily DAG runs once all 24
# hours of a day have one (a rollup: Airflow's StartOfDayMapper + DayWindow).
MARTS = Asset(name="rebalance_lens_marts", uri="rebalance-lens://lake/marts")
DAILY_REPORT = Asset(name="rebalance_lens_daily_report", uri="rebalance-lens://lake/report/daily")
PARTITION_KEY_FORMAT = "%Y-%m-%dT%H:%M:%S"  # the temporal partition mappers' input format
