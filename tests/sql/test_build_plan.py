"""Which marts a SQL build runs (``sql_build.plan``): the ones that changed only. Pure: no Spark."""
from __future__ import annotations

from pipelines.sql_build import Mart, plan

MARTS = {m.name: m for m in (
    Mart("group_hourly_costs", "group_id", frozenset({"metrics"})),
    Mart("member_costs", "group_id", frozenset({"handoffs", "members"})),
    Mart("quarantine_daily", "arrival_date", frozenset({"quarantine"})),
    Mart("recommendation_checks", None, frozenset({"verifications"})),
)}


def test_new_events_of_a_group_run_the_group_marts_only():
    todo = plan(MARTS, whole=[], scope={"group_id": 1, "arrival_date": 0},
                changed_sources={"events", "metrics", "handoffs", "members", "stage_progress"}, project_changed=False)
    assert todo.run == ("group_hourly_costs", "member_costs") and todo.whole == ()
    assert todo.said() == "sql: 2 mart(s) to build (0 whole; new data in 1 group id)"


def test_a_mart_without_a_scope_runs_when_a_source_it_reads_changed():
    todo = plan(MARTS, whole=[], scope={"group_id": 0, "arrival_date": 2}, changed_sources={"verifications"},
                project_changed=False)
    assert todo.run == ("quarantine_daily", "recommendation_checks")


def test_nothing_new_runs_nothing_and_a_missing_or_upgraded_mart_runs():
    quiet = {"scope": {"group_id": 0, "arrival_date": 0}, "changed_sources": set()}
    assert plan(MARTS, whole=[], project_changed=False, **quiet).run == ()
    assert plan(MARTS, whole=["quarantine_daily"], project_changed=False, **quiet).run == ("quarantine_daily",)
    assert plan(MARTS, whole=[], project_changed=True, **quiet).run == tuple(sorted(MARTS))
