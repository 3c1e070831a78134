"""Set-up errors name the problem and the fix; the jar cache is reused."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lens_runtime.errors import LensError
from lens_runtime import jvm_deps


def test_pins_match_the_installed_wheels():
    import pyspark
    from importlib import metadata

    pins = jvm_deps.pinned_versions()
    assert pins.spark == pyspark.__version__
    assert pins.delta == metadata.version("delta-spark")


def test_second_setup_is_a_no_op(monkeypatch):
    assert jvm_deps.jars_ready()
    monkeypatch.setattr(jvm_deps.shutil, "which", lambda name: None if name == "mvn" else os.devnull)
    monkeypatch.setattr(jvm_deps, "java_major_version", lambda: 17)
    # With Maven "missing", ensure_jars can only succeed by reusing the cache.
    assert jvm_deps.ensure_jars(quiet=True) == jvm_deps.jars_dir()


def test_spark_jars_do_not_shadow_spark():
    names = {jvm_deps.artifact_name(j) for j in jvm_deps.spark_jars()}
    assert {"delta-spark_4.2_2.13", "spark-sql-kafka-0-10_2.13", "kafka-clients"} <= names
    assert not names & {"jackson-core", "scala-library", "hadoop-client-api", "log4j-core"}


def test_old_java_is_named(tmp_path: Path, monkeypatch):
    fake = tmp_path / "java"
    fake.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LensError, match="Java 11 .* too old.*17"):
        jvm_deps.java_major_version()


def test_unreachable_maven_central_is_named(tmp_path: Path, monkeypatch):
    """A real Maven run against an empty local repository and a mirror nobody listens on."""
    settings = tmp_path / "settings.xml"
    settings.write_text(f"""<settings><localRepository>{tmp_path / 'repo'}</localRepository>
      <mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf><url>http://127.0.0.1:9/maven2</url></mirror></mirrors>
    </settings>""")
    monkeypatch.setenv("REBALANCE_LENS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LENS_MAVEN_ARGS", f"-s {settings}")
    with pytest.raises(LensError, match="could not reach Maven Central"):
        jvm_deps.ensure_jars(quiet=True)
    assert not (tmp_path / "home" / "jars").exists()
