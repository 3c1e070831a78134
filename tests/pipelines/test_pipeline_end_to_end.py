"""The spine: telemetry on a real topic -> bronze -> validated events -> silver -> gold, checked by hand."""
from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.testing import assertSchemaEqual

from pipelines import catalog, lake
from pipelines.gold import stage as gold_stage
from pipelines.stages import DATA_STAGES, run_pipeline
from tests.support.lakes import fresh_config
from tests.support.fleets import scale_out_then_crash


def _rows(spark, config, table, order):
    return [r.asDict() for r in lake.read(spark, config.lake_path, table).orderBy(*order).collect()]


@pytest.fixture(scope="module")
def landed(spark, kafka, tmp_path_factory):
    config = fresh_config(kafka, tmp_path_factory.mktemp("e2e"))
    fleet = scale_out_then_crash()
    kafka.feed(config.topic, fleet.keyed())
    with pytest.MonkeyPatch.context() as patch:  # note where each stage spills, as the code says it
        spills = []
        spilled = lake.spilled

        def recorded(spark, rows, path):
            spills.append(path)
            return spilled(spark, rows, path)

        patch.setattr(lake, "spilled", recorded)
        results = run_pipeline(spark, config, DATA_STAGES, progress=lambda m: None)
    return fleet, results, config, spills


def test_handoffs_carry_pause_and_duplicates(spark, landed):
    fleet, results, config, _ = landed
    assert results["ingest"]["rows"] == len(fleet.events)
    handoffs = _rows(spark, config, catalog.HANDOFFS, ["assigned_ms", "partition"])
    got = [(h["partition"], h["same_owner"], h["release_kind"], h["pause_s"], h["pause_upper_s"],
            h["uncommitted_at_revoke"], h["duplicates"], h["duplicates_upper"]) for h in handoffs]
    assert got == [
        (0, True, "revoked", 0.7, 0.7, 20, 20, 20),
        (1, False, "revoked", 0.8, 0.8, 0, 0, 0),
        (0, True, "revoked", 0.7, 0.7, 0, 0, 0),
        (1, False, "crash", 54.95, 75.2, 30, 30, 61),  # a crash: bounds
    ]


def test_episodes_and_causes(spark, landed):
    config = landed[2]
    episodes = _rows(spark, config, catalog.EPISODES, ["start_ms"])
    assert [(e["cause"], e["partitions_moved"], e["partitions_lost"]) for e in episodes] == [
        ("start", 0, 0), ("scale_out", 2, 0), ("crash", 2, 1)]
    assert episodes[1]["generation_max"] == 2


def test_metrics_add_up(spark, landed):
    config = landed[2]
    metrics = _rows(spark, config, catalog.METRICS, ["grain", "cause"])
    day_all = next(m for m in metrics if m["grain"] == "day" and m["cause"] == "all")
    assert day_all["rebalances"] == 3
    assert day_all["partitions_moved"] == 4
    assert day_all["duplicates"] == 20 + 30
    assert day_all["duplicates_upper"] == 20 + 61
    assert day_all["lost_partitions"] == 1
    assert day_all["records_processed"] == 100 + 50 + 70 + 30 + 20 + 181
    assert day_all["pause_s"] == pytest.approx(0.7 + 0.8 + 0.7 + 54.95)  # the crash's lower bound counts
    assert day_all["pause_upper_s"] == pytest.approx(0.7 + 0.8 + 0.7 + 75.2)
    assert day_all["revoke_callback_s"] == pytest.approx(0.003 + 0.002)  # a revoke of two partitions counts once
    assert day_all["commit_on_revoke_coverage"] == 0.0  # three graceful handoffs, no commit inside a revoke
    # Days and "all" are sums of the hourly rows by cause (one hour here: both grains agree).
    additive = ["rebalances", "partitions_moved", "duplicates", "lost_partitions", "revoke_callback_s"]
    for grain in ("hour", "day"):
        of_grain = [m for m in metrics if m["grain"] == grain]
        assert {m["cause"] for m in of_grain} == {"all", "start", "scale_out", "crash"}
        every = next(m for m in of_grain if m["cause"] == "all")
        for column in additive:
            assert sum(m[column] for m in of_grain if m["cause"] != "all") == pytest.approx(every[column])
            assert every[column] == pytest.approx(day_all[column])


def test_spilled_rows_do_not_outlive_the_run(landed):
    """Gold's Python pass (and validation's repeat search) spill to Parquet under the
    checkpoints; a finished run removes what it spilled, so the lake keeps no second copy."""
    config, spills = landed[2], landed[3]
    assert gold_stage.spill_path(config, "gold_fold") in spills
    assert all(path.startswith(config.checkpoint_path) for path in spills)
    assert not [path for path in spills if Path(path).exists()]


def test_every_table_has_its_declared_schema(spark, landed):
    """Each table the run wrote has the columns and types pipelines.catalog declares."""
    config = landed[2]
    for table in catalog.TABLES:
        assert lake.exists(spark, config.lake_path, table), table.path
        assertSchemaEqual(lake.read(spark, config.lake_path, table).schema, table.schema())


def test_maintenance_compacts_every_table_and_keeps_its_rows(spark, landed):
    """The daily maintenance (OPTIMIZE, then VACUUM keeping 7 days) leaves each table's rows as
    they were, in no more files (three tables of each kind of layout: partitioned by date, written
    by batch, replaced by group; a whole lake takes ~4 s a table). Last in this module: it
    rewrites the module's lake."""
    from pipelines.maintenance import maintain

    config = landed[2]
    tables = [catalog.EVENTS, catalog.COMMITS, catalog.HANDOFFS]
    rows = {t.path: sorted(map(repr, lake.read(spark, config.lake_path, t).collect())) for t in tables}
    files = {t.path: len(lake.read(spark, config.lake_path, t).inputFiles()) for t in tables}
    after = maintain(spark, config, progress=lambda _m: None, tables=tables)
    assert set(after) == set(rows)
    for t in tables:
        assert sorted(map(repr, lake.read(spark, config.lake_path, t).collect())) == rows[t.path], t.path
        assert after[t.path] <= files[t.path], t.path
    assert sum(after.values()) < sum(files.values())
