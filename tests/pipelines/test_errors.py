"""User mistakes get an error that names the setting and the fix."""
from __future__ import annotations

import dataclasses

import pytest

from lens_cli.main import build_parser
from pipelines.config import SETTINGS, PipelineConfig
from lens_runtime.errors import LensError
from pipelines.ingest import check_topic
from pipelines.stages import resolve_stages
from lens_cli.pipeline_commands import parse_since


def test_since_accepts_iso_and_epoch_and_names_the_formats():
    assert parse_since("2026-01-01") == 1_767_225_600_000
    assert parse_since("2026-01-01T00:00:01Z") == 1_767_225_601_000
    assert parse_since("1767225600000") == 1_767_225_600_000
    with pytest.raises(LensError, match="ISO 8601"):
        parse_since("yesterday")


def test_bad_config_names_the_key(tmp_path):
    with pytest.raises(LensError, match="max_bad_row_fraction"):
        PipelineConfig(bootstrap_servers="x:1", lake_path=str(tmp_path), max_bad_row_fraction=5)
    with pytest.raises(LensError, match="episode_gap_s"):
        PipelineConfig(bootstrap_servers="x:1", lake_path=str(tmp_path), episode_gap_s=0)


def test_settings_resolve_from_arguments_then_environment_then_defaults(tmp_path):
    env = {"LENS_LAKE": str(tmp_path / "env-lake"), "LENS_EPISODE_GAP_S": "20", "LENS_MAX_OFFSETS_PER_TRIGGER": "500"}
    config = PipelineConfig.resolve(env, bootstrap_servers="b:9092", episode_gap_s="5")
    assert (config.lake_path, config.episode_gap_s, config.max_offsets_per_trigger) == (env["LENS_LAKE"], 5.0, 500)
    assert config.checkpoint_path == f"{env['LENS_LAKE']}/_checkpoints"
    assert PipelineConfig.resolve({}, bootstrap_servers="b:9092").episode_gap_s == 10.0
    with pytest.raises(LensError, match="LENS_EPISODE_GAP_S='soon' is not a number"):
        PipelineConfig.resolve({"LENS_EPISODE_GAP_S": "soon"}, bootstrap_servers="b:9092")
    with pytest.raises(LensError, match="--max-offsets-per-trigger='x' is not an integer"):
        PipelineConfig.resolve({}, bootstrap_servers="b:9092", max_offsets_per_trigger="x")


def test_every_setting_is_a_flag_of_pipeline_run():
    flags = ["--bootstrap", "b:9092"]
    for setting in SETTINGS:
        assert setting.field in {f.name for f in dataclasses.fields(PipelineConfig)}, setting
        if setting.flag != "--bootstrap":
            flags += [setting.flag, "7"]
    args = build_parser().parse_args(["pipeline", "run", *flags])
    assert all(getattr(args, s.field) is not None for s in SETTINGS)


def test_stages_in_order_and_unknown_stage():
    assert resolve_stages(["gold", "ingest"]) == ["ingest", "gold"]
    assert resolve_stages(["all"]) == ["ingest", "broker", "validate", "silver", "gold", "recommend", "sql"]
    with pytest.raises(LensError, match="unknown stage 'bronze'"):
        resolve_stages(["bronze"])


def test_missing_topic_and_missing_broker(kafka, tmp_path):
    with pytest.raises(LensError, match="does not exist"):
        check_topic(PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, lake_path=str(tmp_path),
                                   topic="no-such-telemetry"))
    with pytest.raises(LensError, match="no Kafka bootstrap servers"):
        check_topic(PipelineConfig(bootstrap_servers="", lake_path=str(tmp_path)))


def test_pipeline_run_since_reaches_the_stages_or_stops_in_one_line(tmp_path, monkeypatch, capsys):
    """``pipeline run --since``: a valid time reaches the stages as epoch ms; a bad one stops the
    command (exit 2) in one line naming the flag and the formats, before Spark or the lake."""
    import lens_cli.live_spark
    from lens_cli.main import main

    ran: list[tuple[int | None, list[str]]] = []

    class NoSpark:
        def stop(self) -> None:
            pass

    monkeypatch.setattr(lens_cli.live_spark, "start_spark", lambda *_a, **_k: NoSpark())
    monkeypatch.setattr(lens_cli.live_spark, "run_stages",
                        lambda _spark, config, stages, _console: ran.append((config.since_ms, list(stages))))
    lake = str(tmp_path / "lake")
    for since, epoch_ms in (("2026-01-01", 1_767_225_600_000), ("2026-01-01T01:00:00+01:00", 1_767_225_600_000),
                            ("1767225600000", 1_767_225_600_000)):
        assert main(["pipeline", "run", "gold", "--lake", lake, "--since", since]) == 0, capsys.readouterr().err
        assert ran.pop() == (epoch_ms, ["gold"])
    for bad in ("yesterday", "2026-13-01", "-5"):
        assert main(["pipeline", "run", "gold", "--lake", lake, "--since", bad]) == 2
        err = capsys.readouterr().err
        assert err == (f"rebalance-lens: error: --since {bad!r} is not a time: use ISO 8601 (2026-01-31 or "
                       "2026-01-31T12:00:00Z) or epoch milliseconds\n"), err
    assert ran == []
