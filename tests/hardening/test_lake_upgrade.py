"""A lake written before silver/events had ``later_version_json`` (the forward-compatible events'
text) goes on: its next validation adds the column (Delta's mergeSchema on that write only),
the old rows read null in it, and a later-version event keeps its text there."""
from __future__ import annotations

import json

from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.stages import run_pipeline
from pipelines.telemetry_types import LATER_VERSION_COLUMN
from tests.support.fleets import scale_out_then_crash, with_own_ids
from tests.support.lakes import fresh_config


def test_an_older_events_table_gets_the_new_column(spark, kafka, tmp_path):
    config = fresh_config(kafka, tmp_path)
    fleet = with_own_ids(scale_out_then_crash(group="upgrade"), seed=27)
    kafka.feed(config.topic, fleet.keyed()[:10])
    run_pipeline(spark, config, ("ingest", "validate"), progress=lambda _m: None)
    events = lake.read(spark, config.lake_path, catalog.EVENTS)
    # the table as the previous version wrote it: every column but the new one
    older = events.drop(LATER_VERSION_COLUMN)
    older.write.format("delta").mode("overwrite").option("overwriteSchema", "true") \
        .partitionBy(*catalog.EVENTS.partition_by).save(
        catalog.EVENTS.location(config.lake_path))
    assert LATER_VERSION_COLUMN not in lake.read(spark, config.lake_path, catalog.EVENTS).columns

    later = {**fleet.events[10], "schema_version": 3, "zz_added_in_v3": {"x": [1, 2]}}
    kafka.feed(config.topic, fleet.keyed()[11:] + [(later["agent_id"], json.dumps(later), later["event_time_ms"])])
    run_pipeline(spark, config, ("ingest", "validate", "silver", "gold"), progress=lambda _m: None)
    events = lake.read(spark, config.lake_path, catalog.EVENTS)
    assert events.count() == len(fleet.events)
    kept = events.where(F.col(LATER_VERSION_COLUMN).isNotNull()).select("event_id", LATER_VERSION_COLUMN).collect()
    assert [(r.event_id, json.loads(r[LATER_VERSION_COLUMN])["zz_added_in_v3"]) for r in kept] == \
        [(later["event_id"], {"x": [1, 2]})]
