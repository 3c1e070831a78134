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
    assert resolve_stages(["all"]) == ["ingest", "validate", "silver", "gold", "recommend", "sql"]
    with pytest.raises(LensError, match="unknown stage 'bronze'"):
        resolve_stages(["bronze"])


def test_missing_topic_and_missing_broker(kafka, tmp_path):
    with pytest.raises(LensError, match="does not exist"):
        check_topic(PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, lake_path=str(tmp_path),
                                   topic="no-such-telemetry"))
    with pytest.raises(LensError, match="no Kafka bootstrap servers"):
        check_topic(PipelineConfig(bootstrap_servers="", lake_path=str(tmp_path)))


def test_cli_has_pipeline_run():
    args = build_parser().parse_args(["pipeline", "run", "gold", "--since", "2026-01-01"])
    assert (args.stage, args.since) == ("gold", "2026-01-01")
