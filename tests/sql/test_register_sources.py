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
