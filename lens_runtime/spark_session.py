"""The one place a SparkSession is built: Delta, the local jars, quiet logs.

Everything else takes the session as an argument. The settings come from the caller (the
pipeline's config resolves them: ``PipelineConfig.spark_settings``). On a real cluster
(``spark://...``, ``yarn``) ``spark.jars`` ships the same local jars to the executors, so
the jobs run unchanged; the lake path must then be storage every executor can reach.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lens_runtime.errors import LensError
from lens_runtime.jvm_deps import spark_jars
from lens_runtime.paths import home

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


# The JVM's console (its start-up notes, log4j's warnings, the Python workers' stderr) goes to a
# file per process, not the terminal: a user cannot act on "Using incubator modules" or on
# dbt-spark's "Using an existing Spark session" (once per statement). Commands name the file.
LOG_CONF = "spark.rebalance_lens.logFile"
LOGS_KEPT = 20
_jvm_log: Path | None = None  # the file this process's JVM writes to (one JVM per process)


def _new_log(app_name: str) -> Path:
    folder = home() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    for old in sorted(folder.glob("spark-*.log"), key=lambda p: p.stat().st_mtime)[:-(LOGS_KEPT - 1)]:
        old.unlink(missing_ok=True)
    return folder / f"spark-{time.strftime('%Y%m%d-%H%M%S')}-{app_name}-{os.getpid()}.log"


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` while a child process is started: it keeps it."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def _tail(path: Path, lines: int = 3) -> str:
    try:
        found = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(found[-lines:])


def spark_log(spark) -> str:
    """The file the session's JVM writes its console to."""
    return spark.conf.get(LOG_CONF, "")


def build_spark(settings: SparkSettings):
    """A SparkSession with Delta's extension and catalog and the project's jars."""
    global _jvm_log
    from pyspark import SparkContext
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
        # pipelines.lake.sql_literal escapes for Spark's default string literals (backslash escapes):
        # pinned, so a cluster default cannot change what a quoted group id means; and no ${...}
        # substitution in SQL text (on by default): it rewrote a group named "a${x}" to "a" inside
        # a quoted literal before the parser saw the quotes (tests/hardening/test_sql_literal.py).
        .config("spark.sql.parser.escapedStringLiterals", "false")
        .config("spark.sql.variable.substitute", "false")
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
    if SparkContext._gateway is None or _jvm_log is None:  # the first session of this process starts the JVM
        _jvm_log = _new_log(settings.app_name)
        with _stderr_to(_jvm_log):
            try:
                spark = builder.getOrCreate()
            except Exception as err:  # the reason is in the JVM's console, now the log
                first = (str(err).splitlines() or [""])[0]
                raise LensError(f"Spark did not start ({type(err).__name__}: {first}); its log "
                                f"ends: {_tail(_jvm_log) or '(empty)'}; full log: {_jvm_log}") from err
    else:
        spark = builder.getOrCreate()
    spark.conf.set(LOG_CONF, str(_jvm_log))
    spark.sparkContext.setLogLevel(settings.log_level)
    return spark
