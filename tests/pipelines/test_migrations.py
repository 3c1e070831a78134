"""A gold table under older column names is renamed in place (pipelines/migrations.py): one
commit and one line per table, the figures moved to their new names, the layout kept, and
nothing done a second time. On small hand-built tables of the older schema (the whole upgrade
of a lake written by the older code: tests/hardening/test_lake_upgrade.py)."""
from __future__ import annotations

from datetime import datetime

import pytest
from delta.tables import DeltaTable

from pipelines import catalog, lake, migrations
from pipelines.recommend import evidence_queries

OLD_DROPPED_TYPES = {"unavailable_s": "double", "duplicates_confirmed": "bigint",
                     "partition_seconds_unavailable": "double"}


# The columns the broker source added (issue 52), which a lake of the older names predates.
BROKER_SOURCE_ADDED = {catalog.HANDOFFS.path: {"source", "cause_confidence", "duplicates_estimate", "pause_estimate_s",
                                               "stopped_after_ms", "stopped_by_ms"},
                       catalog.EPISODES.path: {"source"}, catalog.METRICS.path: {"broker_covered_s", "broker_coverage"}}


def _older(table: catalog.Table) -> list[tuple[str, str]]:
    """The table's columns as the older code declared them: renamed back, the dropped ones added."""
    migration = next(m for m in migrations.GOLD if m.path == table.path)
    back = {r.new: r.old for r in migration.renames}
    added = BROKER_SOURCE_ADDED.get(table.path, set())
    return [(back.get(name, name), kind) for name, kind in table.all_columns() if name not in added] + \
        [(name, OLD_DROPPED_TYPES[name]) for name in migration.dropped]


def _write_older(spark, lake_path: str, table: catalog.Table, rows: list[dict]) -> None:
    columns = _older(table)
    frame = spark.createDataFrame([tuple(r.get(n) for n, _ in columns) for r in rows],
                                  ", ".join(f"`{n}` {k}" for n, k in columns))
    (frame.write.format("delta").option("delta.dataSkippingStatsColumns", ",".join(table.stats_columns))
     .option("delta.enableDeletionVectors", "true").save(table.location(lake_path)))


HANDOFF = {"handoff_id": "h1", "group_id": "g", "topic": "t", "partition": 0, "release_kind": "crash",
           "unavailable_s": None, "unavailable_lower_s": 0.2, "unavailable_upper_s": 65.2, "duplicates_confirmed": None,
           "duplicates_lower": 30, "duplicates_upper": 231, "duplicates_estimated": 30, "cause": "crash"}
GRACEFUL = {**HANDOFF, "handoff_id": "h2", "release_kind": "revoked", "unavailable_s": 0.7, "unavailable_lower_s": 0.7,
            "unavailable_upper_s": 0.7, "duplicates_confirmed": 20, "duplicates_lower": 20, "duplicates_upper": 20,
            "duplicates_estimated": 20, "cause": "scale_out"}
METRIC = {"group_id": "g", "grain": "day", "cause": "all", "rebalances": 3, "partition_seconds_unavailable": 1.4,
          "partition_seconds_unavailable_lower": 1.6, "partition_seconds_unavailable_upper": 66.6, "duplicates": 50,
          "duplicates_upper": 251}


def test_an_older_gold_table_is_renamed_in_place_once(spark, tmp_path):
    lake_path = str(tmp_path / "lake")
    _write_older(spark, lake_path, catalog.HANDOFFS, [HANDOFF, GRACEFUL])
    _write_older(spark, lake_path, catalog.METRICS, [METRIC])
    versions = {t.path: lake.version(spark, lake_path, t) for t in (catalog.HANDOFFS, catalog.METRICS)}

    said: list[str] = []
    assert migrations.migrate(spark, lake_path, said.append) == said
    assert said == [
        "gold/handoffs: unavailable_lower_s -> pause_s, unavailable_upper_s -> pause_upper_s, "
        "duplicates_lower -> duplicates, duplicates_estimated -> uncommitted_at_revoke; dropped unavailable_s, "
        "duplicates_confirmed (exact ones are where pause_s = pause_upper_s, duplicates = duplicates_upper); "
        f"{migrations.sources_note(catalog.HANDOFFS.path)}",
        "gold/metrics: partition_seconds_unavailable_lower -> pause_s, partition_seconds_unavailable_upper -> "
        "pause_upper_s; dropped partition_seconds_unavailable (the sum of exact pauses only)"]

    handoffs = {r.handoff_id: r.asDict() for r in lake.read(spark, lake_path, catalog.HANDOFFS).collect()}
    assert lake.read(spark, lake_path, catalog.HANDOFFS).schema == catalog.HANDOFFS.schema()
    assert {k: handoffs["h1"][k] for k in ("pause_s", "pause_upper_s", "duplicates", "duplicates_upper",
                                           "uncommitted_at_revoke")} == \
        {"pause_s": 0.2, "pause_upper_s": 65.2, "duplicates": 30, "duplicates_upper": 231, "uncommitted_at_revoke": 30}
    assert (handoffs["h2"]["pause_s"], handoffs["h2"]["pause_upper_s"], handoffs["h2"]["duplicates"]) == (0.7, 0.7, 20)
    # every row before the broker source was the agent's, its cause from telemetry; the log's figures unknown
    assert {(h["source"], h["cause_confidence"], h["pause_estimate_s"]) for h in handoffs.values()} == {
        ("agent", "exact", None)}
    [metric] = lake.read(spark, lake_path, catalog.METRICS).collect()
    assert lake.read(spark, lake_path, catalog.METRICS).schema == catalog.METRICS.schema()
    assert (metric.pause_s, metric.pause_upper_s, metric.duplicates) == (1.6, 66.6, 50)

    # one commit per table, the layout's table properties kept
    for table in (catalog.HANDOFFS, catalog.METRICS):
        assert lake.version(spark, lake_path, table) == versions[table.path] + 1
        properties = DeltaTable.forPath(spark, table.location(lake_path)).detail().first().properties
        assert properties["delta.dataSkippingStatsColumns"] == ",".join(table.stats_columns)

    # a current lake: nothing to say, nothing written
    assert migrations.migrate(spark, lake_path, said.append) == []
    assert lake.version(spark, lake_path, catalog.HANDOFFS) == versions[catalog.HANDOFFS.path] + 1


def test_a_lake_without_the_tables_is_left_alone(spark, tmp_path):
    assert migrations.migrate(spark, str(tmp_path / "empty"), print) == []
    assert migrations.stale_marts(spark, str(tmp_path / "empty"), print) == []
    assert not (tmp_path / "empty").exists()


def test_a_column_the_migration_does_not_know_is_kept(spark, tmp_path):
    lake_path = str(tmp_path / "lake")
    _write_older(spark, lake_path, catalog.METRICS, [METRIC])
    older = lake.read(spark, lake_path, catalog.METRICS)
    older.selectExpr("*", "'x' AS a_users_own_column").write.format("delta").mode("overwrite") \
        .option("overwriteSchema", "true").save(catalog.METRICS.location(lake_path))
    migrations.migrate(spark, lake_path, lambda _line: None)
    migrated = lake.read(spark, lake_path, catalog.METRICS)
    assert migrated.columns == [*catalog.METRICS.column_names(), "a_users_own_column"]  # the new ones null
    assert migrated.first().a_users_own_column == "x"


def _value(i: int, name: str, kind: str):
    """A value of ``kind`` that tells the columns apart (complex types: null)."""
    return {"string": f"{name}-{i}", "bigint": 1000 + i, "int": i, "double": i + 0.25, "boolean": i % 2 == 0,
            "timestamp": datetime(2026, 1, 1, 0, i % 60)}.get(kind)


@pytest.mark.parametrize("migration", migrations.GOLD, ids=lambda m: m.path)
def test_every_renamed_gold_column_carries_its_older_values(spark, tmp_path, migration):
    """Each column of an older row reads, after the migration, under its new name (or its own)."""
    lake_path, table = str(tmp_path / "lake"), migrations.TABLES[migration.path]
    older = {name: _value(i, name, kind) for i, (name, kind) in enumerate(_older(table))}
    _write_older(spark, lake_path, table, [older])
    [line] = migrations.migrate(spark, lake_path, lambda _line: None)
    assert line.startswith(f"{migration.path}: ")
    [row] = [r.asDict() for r in lake.read(spark, lake_path, table).collect()]
    back = {r.new: r.old for r in migration.renames}
    fills = migrations.SOURCE_FILLS.get(migration.path, {})  # the broker source's columns: the agent's rows
    assert row == {name: fills.get(name) if name in BROKER_SOURCE_ADDED.get(migration.path, ()) else
                   older[back.get(name, name)] for name in table.column_names()}


# The evidence queries the landed head's recommend stage wrote (its evidence_queries.Q_COST_BY_CAUSE, Q_WHAT_IF).
OLDER_QUERIES = {
    "Q_COST_BY_CAUSE": "SELECT cause, count(*) AS handoffs, sum(coalesce(duplicates_confirmed, duplicates_lower)) AS "
                       "duplicates, sum(coalesce(duplicates_confirmed, duplicates_upper)) AS duplicates_upper, "
                       "sum(coalesce(unavailable_s, unavailable_lower_s)) AS paused_partition_s "
                       "FROM delta.`{lake}/gold/handoffs` WHERE group_id = :group_id GROUP BY cause",
    "Q_WHAT_IF": "SELECT config, rebalances, handoffs, partitions_moved, duplicates, pause_s, duplicates_saved, "
                 "pause_saved_s FROM delta.`{lake}/gold/what_if` WHERE group_id = :group_id "
                 "ORDER BY duplicates_saved DESC",
    "Q_MEMBERS": evidence_queries.Q_MEMBERS, "Q_EPISODES": evidence_queries.Q_EPISODES,  # unchanged
}


def test_a_stored_evidence_query_is_rewritten_to_the_one_the_rules_write_now():
    for name, older in OLDER_QUERIES.items():
        rewritten = migrations.CLUSTER_EVIDENCE.apply(migrations.EVIDENCE_QUERY.apply(older))
        assert rewritten == getattr(evidence_queries, name), name


def test_a_table_written_before_the_cluster_gets_it_as_the_unknown_cluster_once(spark, tmp_path):
    """Rows from before the envelope carried the cluster read as the cluster of events without one
    (CLUSTER_UNKNOWN): the group stays one group with what such agents send next."""
    lake_path = str(tmp_path / "lake")
    columns = [(n, k) for n, k in catalog.HANDOFFS.all_columns() if n != "cluster_id"]
    rows = [tuple({"handoff_id": "h1", "group_id": "g", "topic": "t", "partition": 0}.get(n) for n, _ in columns)]
    (spark.createDataFrame(rows, ", ".join(f"`{n}` {k}" for n, k in columns))
     .write.format("delta").save(catalog.HANDOFFS.location(lake_path)))

    said: list[str] = []
    assert migrations.migrate(spark, lake_path, said.append) == said == [
        "gold/handoffs: added cluster_id ('' in the rows written before it: their agents sent none)"]
    stored = lake.read(spark, lake_path, catalog.HANDOFFS)
    assert stored.schema == catalog.HANDOFFS.schema()
    assert [(r.cluster_id, r.group_id, r.handoff_id) for r in stored.collect()] == [("", "g", "h1")]
    assert migrations.migrate(spark, lake_path, said.append) == []


def test_a_table_written_before_the_broker_source_reads_as_the_agents_once(spark, tmp_path):
    """Handoffs and episodes from before the broker source were all the agent's, their causes read from
    telemetry: they say so, in one rewrite each; the log's estimates and stop windows are null there."""
    lake_path = str(tmp_path / "lake")
    for table, row in ((catalog.HANDOFFS, {"handoff_id": "h1", "cluster_id": "", "group_id": "g", "topic": "t",
                                           "partition": 0, "cause": "restart"}),
                       (catalog.EPISODES, {"episode_id": "e1", "cluster_id": "", "group_id": "g"})):
        _write_without(spark, lake_path, table, tuple(BROKER_SOURCE_ADDED[table.path]), [row])

    said: list[str] = []
    assert migrations.migrate(spark, lake_path, said.append) == said == [
        f"{p}: {migrations.sources_note(p)}" for p in (catalog.HANDOFFS.path, catalog.EPISODES.path)]
    assert said[0] == ("gold/handoffs: added the broker source's columns (source 'agent', cause_confidence 'exact' "
                       "in the rows written before: the agent's)")
    handoffs = lake.read(spark, lake_path, catalog.HANDOFFS)
    assert handoffs.schema == catalog.HANDOFFS.schema()
    assert [(r.handoff_id, r.source, r.cause_confidence, r.duplicates_estimate) for r in handoffs.collect()] == [
        ("h1", "agent", "exact", None)]
    assert [r.source for r in lake.read(spark, lake_path, catalog.EPISODES).collect()] == ["agent"]
    assert migrations.migrate(spark, lake_path, said.append) == []


def _write_without(spark, lake_path: str, table: catalog.Table, added: tuple[str, ...], rows: list[dict]) -> None:
    """``rows`` written as the code before ``added`` joined the table's declaration wrote them."""
    columns = [(n, k) for n, k in table.all_columns() if n not in added]
    typed = [tuple(float(r[n]) if k == "double" and r.get(n) is not None else r.get(n) for n, k in columns)
             for r in rows]
    (spark.createDataFrame(typed, ", ".join(f"`{n}` {k}" for n, k in columns))
     .write.format("delta").save(table.location(lake_path)))


def test_a_closed_loop_table_gains_the_columns_declared_since_once(spark, tmp_path):
    """gold/verifications is written only by `recommend --verify`: a lake whose checks predate
    `--reruns` gets its columns (null) before the SQL build's staging model selects them."""
    lake_path = str(tmp_path / "lake")
    _write_without(spark, lake_path, catalog.VERIFICATIONS,
                   ("reruns", "measured_duplicates_saved_se", "measured_pause_saved_se_s"),
                   [{"cluster_id": "", "group_id": "g", "verified_at": datetime(2026, 11, 1), "holds": True}])

    said: list[str] = []
    assert migrations.migrate(spark, lake_path, said.append) == said == [
        "gold/verifications: added reruns, measured_duplicates_saved_se, measured_pause_saved_se_s "
        "(null in the rows written before)"]
    stored = lake.read(spark, lake_path, catalog.VERIFICATIONS)
    assert stored.schema == catalog.VERIFICATIONS.schema()
    assert [(r.group_id, r.holds, r.reruns) for r in stored.collect()] == [("g", True, None)]
    assert migrations.migrate(spark, lake_path, said.append) == []


def test_handoffs_written_before_the_estimates_get_them_once(spark, tmp_path):
    """An older gold stored handoffs without the estimates and intervals without the fold's newer columns.
    The migration adds the estimates in one rewrite: a crash's as gold draws them now from the stored
    intervals (which lack what the newer agents send), a revoke's its exact figures."""
    from lens_scenarios.synthetic import P0, P1, Fleet
    from pipelines.gold import upgrade
    from pipelines.gold.handoffs import ESTIMATES, handoffs_of
    from tests.support.reference_ownership import ownership_intervals

    fleet = Fleet()
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().assigned(P0, P1).at(50).fetches(P0, 0).at(60).fetches(P1, 0)
    m1.at(1_000).processes_many({P0: 49, P1: 9}).at(2_100).processes_many({P0: 99, P1: 19}, interval_ms=1_100)
    m1.at(2_300).commits(P0, 100).at(2_400).revokes(P1)
    m2.at(2_500).joins().assigned(P1).at(2_600).fetches(P1, 5)
    m2.at(9_000).assigned(P0).at(9_200).fetches(P0, 100).at(10_200).processes(P0, upto=499, lag=0)
    newer = {"progress_due_ms", "last_commit_ms", "handed_out_at_release"}
    intervals = [{**i, **dict.fromkeys(newer)} for i in ownership_intervals(fleet.events)]
    drawn = {h["handoff_id"]: h for h in handoffs_of([dict(i) for i in intervals])}
    lake_path = str(tmp_path / "lake")
    _write_without(spark, lake_path, catalog.OWNERSHIP, tuple(newer), intervals)
    _write_without(spark, lake_path, catalog.HANDOFFS, ESTIMATES, list(drawn.values()))

    said: list[str] = []
    assert migrations.migrate(spark, lake_path, said.append) == []  # no renames: gold recomputes
    assert upgrade.upgrade(spark, lake_path, said.append) == [upgrade.ESTIMATES_SAID] == said
    stored = {r.handoff_id: r.asDict() for r in lake.read(spark, lake_path, catalog.HANDOFFS).collect()}
    assert lake.read(spark, lake_path, catalog.HANDOFFS).schema == catalog.HANDOFFS.schema()
    assert {i: {c: h[c] for c in ESTIMATES} for i, h in stored.items()} == \
        {i: {c: h[c] for c in ESTIMATES} for i, h in drawn.items()}
    kinds = {h["release_kind"]: h for h in stored.values()}
    assert kinds["crash"]["duplicates_estimate"] is not None and kinds["revoked"]["duplicates_estimate"] == 15
    assert upgrade.upgrade(spark, lake_path, said.append) == []  # once


def test_episodes_written_before_the_clients_timings_get_their_columns_once(spark, tmp_path):
    """gold/episodes of a lake whose phases all came from the agents' states: each gains the join steps (null) and
    phase_source, agent_states where it had phases (a slowest member), null where it had none."""
    lake_path = str(tmp_path / "lake")
    _write_without(spark, lake_path, catalog.EPISODES,
                   ("join_group_s", "leader_assign_s", "sync_group_s", "phase_source"),
                   [{"episode_id": "g@1", "cluster_id": "", "group_id": "g", "join_s": 1.5, "slowest_agent_id": "a1"},
                    {"episode_id": "g@2", "cluster_id": "", "group_id": "g"}])

    said: list[str] = []
    assert migrations.migrate(spark, lake_path, said.append) == said == [
        "gold/episodes: added the join steps and phase_source ('agent_states' where an episode had phases: the "
        "agents' states were their only source)"]
    stored = lake.read(spark, lake_path, catalog.EPISODES)
    assert stored.schema == catalog.EPISODES.schema()
    assert sorted((r.episode_id, r.join_s, r.join_group_s, r.phase_source) for r in stored.collect()) == [
        ("g@1", 1.5, None, "agent_states"), ("g@2", None, None, None)]
    assert migrations.migrate(spark, lake_path, said.append) == []
