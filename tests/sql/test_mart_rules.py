"""The marts' rules still hold the build: a bad row planted in a mart's input fails the build,
naming the rule. The row-level rules (not null, accepted values, ranges) are Delta constraints,
checked as the mart is written, whole or by scope (a failed write commits nothing); the rules
that need a query (uniqueness) are tests on what the build wrote.

The lake is made by hand: a few gold rows of one group, the other tables left to the build's
empty placeholders."""
from __future__ import annotations

import pytest
from delta.tables import DeltaTable

from lens_runtime.errors import LensError
from pipelines import catalog, lake, sql_build

MART = "rebalance_episodes"


def _write(spark, lake_path: str, table: catalog.Table, rows: list[dict]) -> None:
    """Append ``rows`` (the columns they name; the rest null) to a lake table of its declared schema."""
    schema = table.schema()
    data = [tuple(row.get(f.name) for f in schema.fields) for row in rows]
    spark.createDataFrame(data, schema).write.format("delta").mode("append").save(table.location(lake_path))


def _batch(spark, lake_path: str, batch: int, episodes: list[dict]) -> None:
    """One validation batch: an event of group g and gold's episodes, gold's mark at the batch."""
    _write(spark, lake_path, catalog.EVENTS, [{"event_id": f"e{batch}", "kind": "assigned", "cluster_id": "",
                                               "group_id": "g", "agent_id": "a", "seq": batch,
                                               "event_time_ms": 1_800_000_000_000, "validate_batch": batch}])
    _write(spark, lake_path, catalog.EPISODES, episodes)
    lake.set_stage_mark(spark, lake_path, "gold", batch)


def _episode(episode_id: str, cause: str) -> dict:
    return {"episode_id": episode_id, "cluster_id": "", "group_id": "g", "start_ms": 1_800_000_000_000,
            "end_ms": 1_800_000_004_000, "duration_s": 4.0, "cause": cause, "join_s": 1.0, "callbacks_s": 0.5}


def _versions(spark, lake_path: str) -> int:
    return DeltaTable.forPath(spark, f"{sql_build.marts_path(lake_path)}/{MART}").history().count()


def test_a_bad_row_fails_the_build_naming_the_rule_whole_then_by_scope(spark, tmp_path):
    lake_path = str(tmp_path / "lake")
    _batch(spark, lake_path, 0, [_episode("ep-0", "no-such-cause")])
    with pytest.raises(LensError, match=f"{MART}: .*CHECK constraint accepted_values_cause"):
        sql_build.build(spark, lake_path, progress=lambda _m: None)  # the mart is new: written whole

    DeltaTable.forPath(spark, catalog.EPISODES.location(lake_path)).update(set={"cause": "'crash'"})
    sql_build.build(spark, lake_path, progress=lambda _m: None)
    assert lake.stage_mark(spark, lake_path, sql_build.SQL_STAGE) == 0
    written = _versions(spark, lake_path)

    # a later batch of the group: the build replaces its scope, and a broken rule fails that write
    _batch(spark, lake_path, 1, [_episode("ep-1", "crash") | {"join_s": 9.0}])  # phases longer than the episode
    with pytest.raises(LensError, match=f"{MART}: .*CHECK constraint phases_within_duration"):
        sql_build.build(spark, lake_path, progress=lambda _m: None)
    assert _versions(spark, lake_path) == written  # the failed write committed nothing
    assert lake.stage_mark(spark, lake_path, sql_build.SQL_STAGE) == 0  # the next build tries the scope again


@pytest.mark.slow  # about a minute: two builds; ``./lens test -m slow tests/sql/test_mart_rules.py``
def test_a_duplicate_fails_the_uniqueness_test_on_the_scope_just_written(spark, tmp_path):
    lake_path = str(tmp_path / "lake")
    _batch(spark, lake_path, 0, [_episode("ep-0", "crash")])
    sql_build.build(spark, lake_path, progress=lambda _m: None)

    _batch(spark, lake_path, 1, [_episode("ep-0", "restart")])  # the same episode id again
    with pytest.raises(LensError, match=f"unique_{MART}_episode_id"):
        sql_build.build(spark, lake_path, progress=lambda _m: None)
