"""The SQL build's sources register over what an earlier process left in the warehouse: a lake
table no stage has written yet (a lake's ``gold/verifications`` before a closed-loop check) is an
empty placeholder there, whose folder outlives the process that made it. Every build process (a
command, an Airflow task in a worker) uses the lake's warehouse, so the next one must clear it."""
from __future__ import annotations

from pipelines import catalog, lake, sql_build


def test_a_placeholder_folder_left_by_another_process_is_cleared(spark, tmp_path):
    lake_path = str(tmp_path / "lake")  # no table written: every source is a placeholder
    assert not lake.exists(spark, lake_path, catalog.VERIFICATIONS)
    sql_build.register_sources(spark, lake_path)
    folder = f"{spark.catalog.getDatabase(sql_build.SOURCE_SCHEMA).locationUri}/verifications"
    # What another process leaves: the folder with a Delta log, and no name in this catalog.
    spark.sql(f"DROP TABLE {sql_build.SOURCE_SCHEMA}.verifications")
    spark.createDataFrame([], catalog.VERIFICATIONS.schema()).write.format("delta").save(folder)

    sql_build.register_sources(spark, lake_path)  # DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION without the clearing

    registered = spark.table(f"{sql_build.SOURCE_SCHEMA}.verifications")
    assert registered.columns == catalog.VERIFICATIONS.schema().fieldNames() and registered.count() == 0


HOSTILE = ["it's", "back\\slash", "a${x}b", "'); drop table x; --", "line\nbreak", "ünï"]


def test_the_scope_holds_any_group_id_as_data_and_reads_without_a_spark_job(spark, tmp_path):
    """The build's scope is registered from the data (inline VALUES whose values are query
    parameters, never SQL text) and read by the models when they compile: no Spark job."""
    from pipelines.stage_costs import StageCosts

    lake_path = str(tmp_path / "lake")
    schema = catalog.EVENTS.schema()
    rows = [tuple({"event_id": f"e{i}", "group_id": g, "validate_batch": 1}.get(f.name) for f in schema.fields)
            for i, g in enumerate(HOSTILE)]
    spark.createDataFrame(rows, schema).write.format("delta").save(catalog.EVENTS.location(lake_path))
    assert sql_build.register_scope(spark, lake_path, after=0) == {"group_id": len(HOSTILE), "arrival_date": 0}
    costs = StageCosts(spark, lake_path)
    with costs.measure("read"):
        found = spark.sql("select value, key from global_temp.group_id_scope").collect()
    assert costs["read"].jobs == 0
    keys = {r.g: r.k for r in spark.createDataFrame([(g,) for g in HOSTILE], "g string")
            .selectExpr("g", "xxhash64(g) as k").collect()}
    assert {(r.value, r.key) for r in found} == set(keys.items())
    assert sql_build.register_scope(spark, lake_path, after=1)["group_id"] == 0  # nothing after the last batch
    # a group whose broker history gold priced further joins the group scope, as data too
    widened = sql_build.register_scope(spark, lake_path, after=1, repriced=["only-the-broker's"])
    assert widened["group_id"] == 1
    assert [r.value for r in spark.sql("select value from global_temp.group_id_scope").collect()] == \
        ["only-the-broker's"]


def test_a_group_gold_priced_further_in_the_log_is_repriced_once():
    recorded = [["c1", "a", 10], ["c1", "b", 20]]
    now = [["c1", "a", 10], ["c1", "b", 25], ["c2", "b", 3], ["c2", "c", 7]]
    assert sql_build.repriced_groups(now, recorded) == ["b", "c"]
    assert sql_build.repriced_groups(now, now) == []
