"""The stage cost instrument's pure parts: what it counts as a data file written, and a job's kind."""
from __future__ import annotations

from pipelines.stage_costs import StageCost, files_added, job_kind


def test_a_file_only_marked_by_a_deletion_vector_is_not_a_file_written():
    commit = [{"commitInfo": {"operation": "WRITE"}},
              {"remove": {"path": "part-0.parquet"}},
              {"add": {"path": "part-0.parquet", "deletionVector": {"cardinality": 1}}},  # rows marked deleted
              {"add": {"path": "part-1.parquet"}}]
    assert files_added(commit) == 1


def test_a_jobs_kind_leaves_out_its_numbers_and_quoted_names():
    assert job_kind("Delta: Compute snapshot for version: 17") == "Delta: Compute snapshot for version: #"
    assert job_kind("collect at /x/session.py:212\nmore") == "collect at /x/session.py:#"
    assert job_kind("select * from `orders` where g = 'a'") == "select * from … where g = …"


def test_the_cost_line_names_every_count():
    cost = StageCost("sql", wall_s=10.0, jobs=40, setup_s=3.0, in_jobs_s=5.0,
                     commits={"marts/member_costs": 1}, operations={"marts/member_costs": ["WRITE"]}, files=1)
    assert cost.driver_s == 2.0
    assert cost.line() == ("10.0 s: set-up 3.0 s, 40 Spark jobs running 5.0 s, driver 2.0 s; "
                           "1 Delta commits (marts/member_costs 1 (WRITE)), 1 files written")
