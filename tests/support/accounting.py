"""Where each telemetry record went: every bronze record is in silver/events, in the quarantine,
or a duplicate of an event in silver, exactly one of them; per validation batch and over the
lake the counts add up (bronze = silver + quarantine + duplicates)."""
from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import SparkSession

from pipelines import catalog, lake

Place = tuple[str, int, int]  # topic, partition, offset


@dataclass(frozen=True)
class Fate:
    """What validation did with one record: ``event`` (in silver), ``quarantine`` (with its
    reasons) or ``duplicate`` (its event id is in silver from another record)."""

    kind: str
    reasons: tuple[str, ...] = ()


def fates(spark: SparkSession, lake_path: str) -> dict[Place, Fate]:
    """Every bronze record's fate; an AssertionError names a record with none or two."""
    events = {(r.topic, r.kafka_partition, r.kafka_offset): r.event_id for r in
              lake.read(spark, lake_path, catalog.EVENTS).select(*catalog.BRONZE_KEYS, "event_id").collect()}
    quarantined = {(r.topic, r.kafka_partition, r.kafka_offset): tuple(r.reasons) for r in
                   lake.read(spark, lake_path, catalog.QUARANTINE).select(*catalog.BRONZE_KEYS, "reasons").collect()}
    both = set(events) & set(quarantined)
    assert not both, f"records both in silver and in the quarantine: {sorted(both)[:5]}"
    ids = set(events.values())
    out: dict[Place, Fate] = {}
    for r in lake.read(spark, lake_path, catalog.BRONZE).select(*catalog.BRONZE_KEYS, "value").collect():
        place = (r.topic, r.kafka_partition, r.kafka_offset)
        assert place not in out, f"bronze holds {place} twice"
        if place in events:
            out[place] = Fate("event")
        elif place in quarantined:
            out[place] = Fate("quarantine", quarantined[place])
        else:
            event_id = json.loads(bytes(r.value))["event_id"]  # only a valid event can be a duplicate
            assert event_id in ids, f"{place} is in neither silver nor the quarantine and repeats no event"
            out[place] = Fate("duplicate")
    return out


def batch_counts(spark: SparkSession, lake_path: str) -> list[dict[str, int]]:
    """Per validation batch: the summary's counts beside the rows the tables hold for it."""
    summary = lake.read(spark, lake_path, catalog.VALIDATION_SUMMARY).orderBy("validate_batch").collect()
    in_events = dict(lake.read(spark, lake_path, catalog.EVENTS).groupBy("validate_batch").count().collect())
    in_quarantine = dict(lake.read(spark, lake_path, catalog.QUARANTINE).groupBy("validate_batch").count().collect())
    return [{"batch": s.validate_batch, "rows": s.rows, "quarantined": s.quarantined, "duplicates": s.duplicates,
             "new_events": s.new_events, "passed": s.passed, "events_rows": in_events.get(s.validate_batch, 0),
             "quarantine_rows": in_quarantine.get(s.validate_batch, 0)} for s in summary]


def assert_bronze_adds_up(spark: SparkSession, lake_path: str) -> dict[str, int]:
    """bronze = silver + quarantine + duplicates, per batch (the summary against the tables'
    rows of that batch) and over the lake (record by record); the totals."""
    batches = batch_counts(spark, lake_path)
    for b in batches:
        assert b["passed"], b
        assert b["rows"] == b["quarantined"] + b["duplicates"] + b["new_events"], b
        assert (b["events_rows"], b["quarantine_rows"]) == (b["new_events"], b["quarantined"]), b
    found = fates(spark, lake_path)
    kinds = [f.kind for f in found.values()]
    totals = {"bronze": len(found), "events": kinds.count("event"), "quarantined": kinds.count("quarantine"),
              "duplicates": kinds.count("duplicate"), "batches": len(batches)}
    assert totals["bronze"] == sum(b["rows"] for b in batches) == lake.read(spark, lake_path, catalog.BRONZE).count()
    assert (totals["events"], totals["quarantined"], totals["duplicates"]) == (
        sum(b["new_events"] for b in batches), sum(b["quarantined"] for b in batches),
        sum(b["duplicates"] for b in batches)), (totals, batches)
    return totals
