"""The lake's one way to rewrite what a run recomputed: replace a scope of groups in one commit.
A group is (cluster_id, group_id): one group name on two clusters is two scopes."""
from __future__ import annotations

import threading

import pytest

from pipelines import lake
from pipelines.catalog import Table

ROWS_DDL = "cluster_id string, group_id string, key bigint, value string"
TABLE = Table("test/rows", grain="one row per group and key", keys=("key",), written_by="this test")


def _table(spark, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in lake.read(spark, path, TABLE).collect())


def test_replace_scope_rewrites_only_the_scope_even_with_quotes_in_ids(spark, tmp_path):
    path = str(tmp_path)
    quoted = "o'neil\\group"  # a quote and a backslash: the scope goes into a SQL predicate
    before = [("eu", "plain", 1, "a"), ("eu", "plain", 2, "b"), ("eu", quoted, 1, "c"), ("eu", "other", 1, "d"),
              ("us", "plain", 1, "f"), (quoted, "other", 1, "g")]
    lake.replace_scope(spark, path, TABLE, spark.createDataFrame(before, ROWS_DDL),
                       [("eu", "plain"), ("eu", quoted), ("eu", "other"), ("us", "plain"), (quoted, "other")])
    assert _table(spark, path) == sorted(before)

    # eu's "plain" lost key 2 and changed key 1; the quoted group got a new row; eu's "other", us's "plain"
    # (the same name on another cluster) and the quoted cluster's "other" are outside the scope.
    recomputed = [("eu", "plain", 1, "a2"), ("eu", quoted, 1, "c"), ("eu", quoted, 2, "e")]
    lake.replace_scope(spark, path, TABLE, spark.createDataFrame(recomputed, ROWS_DDL),
                       [("eu", "plain"), ("eu", quoted)])
    untouched = [("eu", "other", 1, "d"), ("us", "plain", 1, "f"), (quoted, "other", 1, "g")]
    assert _table(spark, path) == sorted([*recomputed, *untouched])

    # A scope whose recomputation yields nothing is emptied; one commit per replacement.
    versions = lake.version(spark, path, TABLE)
    lake.replace_scope(spark, path, TABLE, spark.createDataFrame([], ROWS_DDL), [("eu", quoted)])
    assert _table(spark, path) == sorted([("eu", "plain", 1, "a2"), *untouched])
    assert lake.version(spark, path, TABLE) == versions + 1


def test_a_scope_replaced_from_a_time_keeps_its_rows_before_it(spark, tmp_path):
    """A group written from its horizon (``since``) has its rows from there on replaced and keeps the
    older ones; a group without one is replaced whole; rows outside the time are refused (Delta's check)."""
    path = str(tmp_path)
    quoted = "o'neil\\group"
    before = [("eu", quoted, k, f"v{k}") for k in (1, 2, 3)] + [("eu", "whole", k, f"w{k}") for k in (1, 2)]
    lake.replace_scope(spark, path, TABLE, spark.createDataFrame(before, ROWS_DDL), [("eu", quoted), ("eu", "whole")])
    recomputed = [("eu", quoted, 2, "v2'"), ("eu", quoted, 4, "v4"), ("eu", "whole", 2, "w2'")]
    lake.replace_scope(spark, path, TABLE, spark.createDataFrame(recomputed, ROWS_DDL),
                       [("eu", quoted), ("eu", "whole")], {("eu", quoted): 2}, "key")
    assert _table(spark, path) == sorted([("eu", quoted, 1, "v1"), *recomputed])
    with pytest.raises(Exception, match="(?i)replaceWhere|does not conform|violat"):
        lake.replace_scope(spark, path, TABLE, spark.createDataFrame([("eu", quoted, 1, "old")], ROWS_DDL),
                           [("eu", quoted)], {("eu", quoted): 2}, "key")


def test_rows_of_a_long_scope_keeps_exactly_its_rows(spark, tmp_path, monkeypatch):
    """Past LISTED_VALUES_MAX values the scope is read by range and semi-join; the rows are the same."""
    path = str(tmp_path)
    rows = [(c, f"g{i:02d}", i, "v") for i in range(12) for c in ("eu", "us")]
    lake.insert_new(spark, path, TABLE, spark.createDataFrame(rows, ROWS_DDL))
    scope = [("eu", "g03"), ("us", "g04"), ("eu", "g07"), ("us", "g07"), ("eu", "g10"), ("eu", "absent")]
    listed = sorted(tuple(r) for r in lake.rows_of(spark, path, TABLE, ("cluster_id", "group_id"), scope).collect())
    monkeypatch.setattr(lake, "LISTED_VALUES_MAX", 2)
    joined = sorted(tuple(r) for r in lake.rows_of(spark, path, TABLE, ("cluster_id", "group_id"), scope).collect())
    assert listed == joined == sorted(r for r in rows if r[:2] in scope)


def test_a_table_gains_a_declared_column_on_its_next_write(spark, tmp_path):
    """A nullable column added to a table's declaration: the next replace adds it (rows written
    before read null in it), and stored rows read through the declaration carry it too."""
    path = str(tmp_path)
    lake.replace_scope(spark, path, TABLE, spark.createDataFrame([("c", "a", 1, "x"), ("c", "b", 1, "y")], ROWS_DDL),
                       [("c", "a"), ("c", "b")])
    grown = Table("test/rows", grain=TABLE.grain, keys=TABLE.keys, written_by=TABLE.written_by,
                  columns=(("cluster_id", "string"), ("group_id", "string"), ("key", "bigint"), ("value", "string"),
                           ("added", "double")))
    stored = lake.declared(lake.read(spark, path, grown), grown)
    assert stored.columns == grown.column_names() and stored.where("added IS NOT NULL").count() == 0

    lake.replace_scope(spark, path, grown, spark.createDataFrame([("c", "a", 1, "x", 2.5)], grown.ddl()), [("c", "a")])
    assert lake.read(spark, path, grown).schema == grown.schema()
    assert sorted(tuple(r) for r in lake.read(spark, path, grown).collect()) == [("c", "a", 1, "x", 2.5),
                                                                                 ("c", "b", 1, "y", None)]


def test_tables_land_side_by_side_and_a_failure_waits_for_the_others(spark, tmp_path):
    """Two tables written at once by ``land_together``: both committed, each with its rows; a failed
    landing is raised only once the others are done (none left writing under a failed stage)."""
    path, other = str(tmp_path), Table("test/other", grain="one row per group and key", keys=("key",),
                                       written_by="this test")
    both = threading.Barrier(2, timeout=120)  # one after another, the first would wait here alone

    def land(table: Table, value: str) -> str:
        both.wait()
        lake.replace_scope(spark, path, table, spark.createDataFrame([("eu", "g", 1, value)], ROWS_DDL), [("eu", "g")])
        return value

    assert lake.land_together([lambda: land(TABLE, "a"), lambda: land(other, "b")]) == ["a", "b"]
    assert _table(spark, path) == [("eu", "g", 1, "a")]
    assert [tuple(r) for r in lake.read(spark, path, other).collect()] == [("eu", "g", 1, "b")]

    finished = []

    def fails() -> None:
        raise ValueError("planted")

    def slow() -> None:
        threading.Event().wait(0.5)
        finished.append("slow")

    with pytest.raises(ValueError, match="planted"):
        lake.land_together([fails, slow])
    assert finished == ["slow"]
