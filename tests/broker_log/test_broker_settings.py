"""The broker source's settings and its slices, without a broker: which clusters it reads with which
client settings, a bad value in one line, and where each slice starts and ends."""
from __future__ import annotations

import pytest

from lens_runtime.errors import LensError
from pipelines.broker import stage
from pipelines.config import PipelineConfig


def test_off_by_default_and_then_nothing_is_asked():
    config = PipelineConfig.resolve({}, bootstrap_servers="b:9092")
    said: list[str] = []
    assert config.broker_source == "off"
    assert stage.run(None, config, said.append) == {"clusters": 0}  # no Spark, no broker asked
    assert "--broker-source on" in said[0]


def test_a_bad_value_names_the_flag_or_the_variable_and_the_fix():
    with pytest.raises(LensError, match="broker_source='yes' is neither on nor off: pass --broker-source on"):
        PipelineConfig.resolve({"LENS_BROKER_SOURCE": "yes"}, bootstrap_servers="b:9092")
    with pytest.raises(LensError, match="--broker-max-records or LENS_BROKER_MAX_RECORDS"):
        PipelineConfig.resolve({}, bootstrap_servers="b:9092", broker_max_records="0")
    with pytest.raises(LensError, match="LENS_BROKER_MAX_RECORDS='many' is not an integer"):
        PipelineConfig.resolve({"LENS_BROKER_MAX_RECORDS": "many"}, bootstrap_servers="b:9092")


def test_the_clusters_and_each_ones_client_settings():
    sasl = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    config = PipelineConfig.resolve({"LENS_BROKER_SOURCE": "on", "LENS_BROKER_CLUSTERS": "a:1,b:2; c:3"},
                                    bootstrap_servers="t:9092", kafka_options={"security.protocol": "SSL"},
                                    broker_kafka_options={"*": sasl, "c:3": {"sasl.mechanism": "SCRAM-SHA-512"}})
    clusters = stage.clusters_of(config)
    assert [c.bootstrap for c in clusters] == ["a:1,b:2", "c:3"]
    assert clusters[0].options == {**sasl, "bootstrap.servers": "a:1,b:2"}
    assert clusters[1].options == {**sasl, "sasl.mechanism": "SCRAM-SHA-512", "bootstrap.servers": "c:3"}
    telemetry = stage.clusters_of(PipelineConfig.resolve({}, bootstrap_servers="t:9092", broker_source="on",
                                                         kafka_options={"security.protocol": "SSL"}))
    assert [(c.bootstrap, c.options) for c in telemetry] == [
        ("t:9092", {"security.protocol": "SSL", "bootstrap.servers": "t:9092"})], "the telemetry cluster, its settings"


def test_slices_go_on_from_the_last_one_capped_and_above_what_retention_deleted():
    earliest, bound = {0: 0, 1: 100, 2: 0}, {0: 50, 1: 400, 2: 0}
    assert stage.next_slice({}, earliest, bound, None) == ({0: 0, 1: 100, 2: 0}, {0: 50, 1: 400, 2: 0})
    starts, ends = stage.next_slice({0: 50, 1: 40}, earliest, bound, 100)
    assert starts == {0: 50, 1: 100, 2: 0} and ends == {0: 50, 1: 200, 2: 0}
    assert stage.next_slice({0: 50, 1: 400}, earliest, bound, 100) == ({0: 50, 1: 400, 2: 0},) * 2
