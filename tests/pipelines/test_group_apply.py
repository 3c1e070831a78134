"""apply_per_group: one call per group with all of the group's rows, output typed by the DDL, on real Spark."""
from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from pyspark.errors import PythonException

from pipelines.group_apply import apply_per_group
from pipelines.gold.stage import ENVELOPE_FOR_LOGIC
from pipelines.catalog import OWNERSHIP
from lens_scenarios.synthetic import P0, P1, Fleet
from tests.support.reference_ownership import ownership_intervals


@contextmanager
def arrow_batches_of(spark, rows: int):
    """Small Arrow batches so that groups span batch boundaries."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, str(rows))
    try:
        yield
    finally:
        spark.conf.set(key, before)


def test_each_group_is_one_call_with_all_its_rows_even_across_batches(spark):
    sizes = {"a": 7, "b": 1, "c": 12, "d": 5}
    df = spark.createDataFrame([(g, i) for g, n in sizes.items() for i in range(n)], "g string, v bigint")

    def summary(rows: list[dict]) -> list[dict]:
        return [{"g": rows[0]["g"], "n": len(rows), "values": sorted(r["v"] for r in rows)}]

    with arrow_batches_of(spark, 3):
        out = apply_per_group(df, "g", summary, "g string, n bigint, values array<bigint>").collect()
    assert sorted((r.g, r.n, r["values"]) for r in out) == [(g, n, list(range(n))) for g, n in sorted(sizes.items())]


def test_nested_output_and_groups_without_output(spark):
    df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 3)], "g string, v bigint")

    def nested(rows: list[dict]) -> list[dict]:
        if rows[0]["g"] == "b":
            return []
        return [{"g": "a", "items": [{"v": r["v"], "tags": [str(r["v"])] * r["v"]} for r in rows]}]

    [row] = apply_per_group(df, "g", nested, "g string, items array<struct<v: bigint, tags: array<string>>>").collect()
    assert sorted((i.v, i.tags) for i in row["items"]) == [(1, ["1"]), (2, ["2", "2"])]


def test_a_missing_output_column_fails_naming_it(spark):
    df = spark.createDataFrame([("a", 1)], "g string, v bigint")
    with pytest.raises(PythonException, match="forgotten"):
        apply_per_group(df, "g", lambda rows: [{"g": "a"}], "g string, forgotten bigint").collect()


def _fleet(group: str) -> Fleet:
    fleet = Fleet(group=group)
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0, P1).fetches(P0, 0).fetches(P1, 10).at(1_000).processes(P0, upto=99)
    m1.at(1_500).commits(P0, 100).at(2_000).revokes(P0, P1, callback_ms=2.5)
    m2.at(2_500).joins().assigned(P0, P1).at(2_700).fetches(P0, 100).at(3_000).loses(P1)
    return fleet


def _logic_rows(spark, fleets):
    """The fleets' events as the rows the per-group pass reads (bodies as JSON text)."""
    events = [{**e, "body": json.dumps(e["body"])} for f in fleets for e in f.events]
    return spark.createDataFrame([tuple(e[n] for n in ENVELOPE_FOR_LOGIC) for e in events],
                                 "event_id string, kind string, event_time_ms bigint, agent_id string, seq bigint, "
                                 "cluster_id string, group_id string, member_id string, group_instance_id string, "
                                 "client_id string, host string, generation bigint, group_protocol string, "
                                 "assignor string, body string")


def test_ownership_intervals_through_spark_equal_the_pure_function(spark, unique):
    fleets = [_fleet(f"g1-{unique}"), _fleet(f"g2-{unique}")]
    df = _logic_rows(spark, fleets)
    names = OWNERSHIP.column_names()
    got = sorted((tuple(r[n] for n in names) for r in
                  apply_per_group(df, "group_id", ownership_intervals, OWNERSHIP.ddl()).collect()), key=repr)
    expected = sorted((tuple(i[n] for n in names) for f in fleets for i in ownership_intervals(f.events)), key=repr)
    assert len(expected) == 8 and got == expected
