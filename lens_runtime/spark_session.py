"""The one place a SparkSession is built: Delta, the local jars, quiet logs.

Everything else takes the session as an argument. The settings come from the caller (the
pipeline's config resolves them: ``PipelineConfig.spark_settings``). On a real cluster
(``spark://...``, ``yarn``) ``spark.jars`` ships the same local jars to the executors, so
the jobs run unchanged; the lake path must then be storage every executor can reach.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from lens_runtime.jvm_deps import spark_jars

DRIVER_LOG4J2 = Path(__file__).resolve().parent / "spark-log4j2.properties"


@dataclass(frozen=True)
class SparkSettings:
    """``lake``: where the session keeps its warehouse and Derby folders (the lake's own)."""

    master: str
    lake: str
    log_level: str
    app_name: str = "rebalance-lens"
    shuffle_partitions: int = 4


# Whole-stage codegen of a wide projection (validation's typed rows and their checks)
# yields methods over the JVM's 8000-byte JIT limit, which then run interpreted. This
# flag lets the JIT compile them: on 1M events (noop sink, best of 5) the validate write
# pass took 7.3 s with it, 10.0 s without. Spark's alternative,
# spark.sql.codegen.hugeMethodLimit=8000, falls back to row-at-a-time plans: 8.8 s.
JIT_HUGE_METHODS = "-XX:-DontCompileHugeMethods"


def build_spark(settings: SparkSettings):
    """A SparkSession with Delta's extension and catalog and the project's jars."""
    from pyspark.sql import SparkSession

    # Python workers must run the driver's interpreter (the venv with our packages), not
    # whatever python3 is first on PATH. A cluster sets PYSPARK_PYTHON itself.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if settings.master.startswith("local"):
        # A local driver needs no routable address; this also silences the hostname warning.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    lake = settings.lake
    if "://" not in lake:
        Path(lake).mkdir(parents=True, exist_ok=True)
        lake = str(Path(lake).resolve())
    builder = (
        SparkSession.builder.master(settings.master)
        .appName(settings.app_name)
        .config("spark.jars", ",".join(str(j) for j in spark_jars()))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        # Delta's parser drops spark.sql(query, args)'s parameters on Spark 4.1+ (delta-io/delta#7640,
        # SPARK-59672), so queries would need values spliced into their text; the legacy binding works.
        .config("spark.sql.legacy.parameterSubstitution.constantsOnly", "true")
        .config("spark.sql.warehouse.dir", f"{lake}/_warehouse")
        .config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={DRIVER_LOG4J2} -Dderby.system.home={lake}/_derby {JIT_HUGE_METHODS}")
        .config("spark.executor.extraJavaOptions", JIT_HUGE_METHODS)
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.log_level)
    return spark
