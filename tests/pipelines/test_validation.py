"""Bad, truncated, unknown-version and duplicated telemetry on a real topic: quarantined or
deduplicated, with counts that add up; a rerun with nothing new changes no table; a late
event updates the episode it belongs to."""
from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from pipelines import catalog, lake, validate
from lens_runtime.errors import LensError
from pipelines.stages import DATA_STAGES, run_pipeline
from lens_scenarios.synthetic import P0, Fleet
from tests.support.lakes import fresh_config
from tests.support.fleets import scale_out_then_crash

TABLES = catalog.TABLES


def _bad_records(template: dict, t_ms: int) -> dict[str, tuple]:
    """One record per way telemetry goes wrong, keyed by the reason it must be quarantined for."""
    def variant(**changes):
        return ("bad-agent", json.dumps({**template, **changes}), t_ms)
    commit = {**template, "kind": "commit", "body": {"mode": "manual", "sync": True, "in_revoke": False, "error": None,
                                                     "duration_ms": 1.0, "offsets": [{"topic": "orders", "partition": 0,
                                                                                      "offset": -5, "error": None}]}}
    return {
        "malformed_json": ("bad-agent", "{not json", t_ms),
        "malformed_json+truncated": ("bad-agent", json.dumps(template)[:60], t_ms),
        "unknown_schema_version": variant(schema_version=0, event_id="v0" * 10),  # later ones are read as v1
        "missing_event_id": variant(event_id=None),
        "implausible_time": variant(event_time_ms=978_307_200_000, event_id="old" * 8),
        "negative_offset": ("bad-agent", json.dumps({**commit, "event_id": "neg" * 8}), t_ms),
    }


@pytest.fixture(scope="module")
def messy(spark, kafka, tmp_path_factory):
    config = fresh_config(kafka, tmp_path_factory.mktemp("messy"), max_bad_row_fraction=0.5)
    fleet = scale_out_then_crash()
    records = fleet.keyed()
    kept = records[:5] + records[6:]           # one event lost in transit: a sequence gap
    duplicates = records[10:13]                # the agent retried three sends
    bad = _bad_records(fleet.events[0], records[0][2])
    sent = kafka.feed(config.topic, kept + duplicates + list(bad.values()))
    run_pipeline(spark, config, DATA_STAGES, progress=lambda m: None)
    return config, fleet, kept, duplicates, bad, sent


def test_counts_add_up(spark, messy):
    config, fleet, kept, duplicates, bad, sent = messy
    summary = lake.read(spark, config.lake_path, catalog.VALIDATION_SUMMARY).agg(
        *[F.sum(c).alias(c) for c in ("rows", "quarantined", "valid", "duplicates", "new_events", "missing_events")]
    ).first().asDict()
    assert summary == {"rows": sent, "quarantined": len(bad), "valid": sent - len(bad),
                       "duplicates": len(duplicates), "new_events": len(kept), "missing_events": 1}
    assert lake.read(spark, config.lake_path, catalog.EVENTS).count() == len(kept)
    assert lake.read(spark, config.lake_path, catalog.BRONZE).count() == sent


def test_quarantine_says_why(spark, messy):
    config, _, _, _, bad, _ = messy
    rows = lake.read(spark, config.lake_path, catalog.QUARANTINE).collect()
    by_value = {bytes(r["value"]).decode(): set(r["reasons"]) for r in rows}
    for expected, (_, value, _) in bad.items():
        assert expected.split("+")[0] in by_value[value], (expected, by_value[value])


def test_rerun_without_new_data_changes_nothing(spark, messy):
    config = messy[0]
    before = {t: lake.version(spark, config.lake_path, t) for t in TABLES}
    said: list[str] = []
    results = run_pipeline(spark, config, DATA_STAGES, progress=said.append)
    after = {t: lake.version(spark, config.lake_path, t) for t in TABLES}
    assert after == before
    assert results["ingest"]["rows"] == 0 and results["gold"]["groups"] == 0
    # bronze unchanged since validate read all of it: no GE set-up, no stream started
    assert "validate: no new bronze rows; nothing to do" in said


@pytest.mark.slow  # about 1 min; late events in the default suite: tests/e2e/test_gold_slices.py
def test_late_event_updates_its_episode(spark, kafka, messy):
    config, fleet, *_ = messy
    crash = lake.read(spark, config.lake_path, catalog.EPISODES).where("cause = 'crash'").first()
    late = Fleet(group=fleet.group, seed=99)
    m9 = late.member("m9")
    m9.at(164_000).requests_rebalance()    # arrives after the run, belongs to the crash episode
    resent = fleet.keyed()[20]              # and the agent resends an old event: a duplicate, not a gap
    kafka.feed(config.topic, late.keyed() + [resent])
    run_pipeline(spark, config, DATA_STAGES, progress=lambda m: None)
    last = lake.read(spark, config.lake_path, catalog.VALIDATION_SUMMARY).orderBy(
        F.desc("validate_batch")).first()
    assert (last["rows"], last["duplicates"], last["new_events"], last["missing_events"]) == (2, 1, 1, 0)
    updated = (lake.read(spark, config.lake_path, catalog.EPISODES)
               .where(f"start_ms <= {crash['end_ms']} AND end_ms >= {crash['start_ms']}"))
    rows = updated.collect()
    # the request moved nothing: the episode's cause stays the crash its handoffs had, and it is among the causes
    assert len(rows) == 1 and rows[0]["cause"] == "crash" and "enforced" in rows[0]["causes"]
    assert rows[0]["events"] == crash["events"] + 1
    assert lake.read(spark, config.lake_path, catalog.EPISODES).count() == 3


def test_too_many_bad_rows_fail_loudly(spark, kafka, tmp_path):
    config = fresh_config(kafka, tmp_path)
    fleet = Fleet()
    fleet.member("m1").at(0).joins().assigned(P0)
    kafka.feed(config.topic, fleet.keyed() + [("x", "{broken", fleet.keyed()[0][2])])
    with pytest.raises(LensError, match="max_bad_row_fraction"):
        run_pipeline(spark, config, stages=["ingest", "validate"], progress=lambda m: None)
    assert lake.read(spark, config.lake_path, catalog.QUARANTINE).count() == 1
    # The batch's rows were landed, then deleted with the batch: no events, nothing for silver.
    assert lake.read(spark, config.lake_path, catalog.EVENTS).count() == 0
    assert lake.validated_through(spark, config.lake_path) == -1


@pytest.mark.slow  # about 1 min; killed runs replayed: tests/hardening/test_kill_every_stage.py (slow)
def test_a_replayed_batch_deletes_what_its_crashed_attempt_landed(spark, kafka, tmp_path, monkeypatch):
    """Validation appends a batch's parsable rows to events, then deletes the bad and
    repeated ones. A crash in between leaves them in flight: silver does not read them,
    and the replay of the batch deletes them before landing it again."""
    config = fresh_config(kafka, tmp_path, max_bad_row_fraction=0.5)
    fleet = Fleet()
    fleet.member("m1").at(0).joins().assigned(P0)
    records = fleet.keyed()
    unknown_kind = ("x", json.dumps({**fleet.events[0], "kind": "nonsense", "event_id": "odd" * 8}), records[0][2])
    sent = kafka.feed(config.topic, records + records[:1] + [unknown_kind])

    def crash(*args, **kwargs):
        raise RuntimeError("killed after landing the batch")

    monkeypatch.setattr(validate.Validator, "check", crash)
    with pytest.raises(Exception, match="killed after landing"):
        run_pipeline(spark, config, stages=["ingest", "validate"], progress=lambda m: None)
    # in flight: every parsable row, the bad and the repeat too
    assert lake.read(spark, config.lake_path, catalog.EVENTS).count() == sent
    assert run_pipeline(spark, config, stages=["silver"], progress=lambda m: None)["silver"] == {"groups": 0}
    monkeypatch.undo()
    run_pipeline(spark, config, DATA_STAGES, progress=lambda m: None)
    summary = lake.read(spark, config.lake_path, catalog.VALIDATION_SUMMARY).collect()
    assert [(r["rows"], r["quarantined"], r["duplicates"], r["new_events"]) for r in summary] == \
        [(sent, 1, 1, len(records))]
    landed = lake.read(spark, config.lake_path, catalog.EVENTS).collect()
    assert sorted(r["event_id"] for r in landed) == sorted(e["event_id"] for e in fleet.events)
