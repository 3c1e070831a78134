"""A lake's content as comparable values: every table the pipeline writes and every SQL mart, each
as its sorted rows, so a lake that went through faults can be held against one that did not.

Only what differs between two correct runs is normalised: the wall-clock time validation
stamps its summary with (``validated_at``) and the lake's own path inside the recommendations'
evidence SQL. Numbers are compared to 9 significant digits (sums of the same terms in another
order differ in the last bits).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake

RUN_TIME_COLUMNS = ("validated_at",)


def _text(value: Any) -> str:
    return f"{value:.9g}" if isinstance(value, float) else str(value)


def table_rows(spark: SparkSession, path: str, lake_path: str, drop: tuple[str, ...] = ()) -> list[tuple]:
    """The Delta table at ``path`` as sorted tuples of text, columns in name order, the lake's path
    written as ``<lake>``."""
    df = spark.read.format("delta").load(path)
    columns = sorted(c for c in df.columns if c not in (*RUN_TIME_COLUMNS, *drop))
    df = df.select(*[F.replace(F.col(c), F.lit(lake_path.rstrip("/")), F.lit("<lake>")).alias(c)
                     if c == "evidence_query" else F.col(c) for c in columns])
    return sorted(tuple(_text(v) for v in r) for r in df.collect())


def snapshot(spark: SparkSession, lake_path: str, tables: tuple[catalog.Table, ...] = catalog.TABLES,
             marts: bool = True, drop: tuple[str, ...] = ()) -> dict[str, list[tuple]]:
    """Each table's rows (a table the lake lacks maps to None), then each mart's as ``marts/<name>``."""
    out: dict[str, Any] = {}
    for table in tables:
        out[table.path] = (table_rows(spark, table.location(lake_path), lake_path, drop)
                           if lake.exists(spark, lake_path, table) else None)
    root = Path(lake_path) / "marts"
    if marts and root.is_dir():
        for mart in sorted(p for p in root.iterdir() if (p / "_delta_log").is_dir()):
            out[f"marts/{mart.name}"] = table_rows(spark, str(mart), lake_path, drop)
    return out


def differences(got: dict[str, list[tuple]], want: dict[str, list[tuple]]) -> dict[str, str]:
    """Per table that differs, a short account (rows only on one side)."""
    out = {}
    for name in sorted(set(got) | set(want)):
        a, b = got.get(name), want.get(name)
        if a == b:
            continue
        if a is None or b is None:
            out[name] = f"present on one side only ({'got' if a is not None else 'want'})"
            continue
        extra, missing = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        out[name] = (f"{len(a)} rows vs {len(b)}; {len(extra)} only in got, e.g. {extra[:1]}; "
                     f"{len(missing)} only in want, e.g. {missing[:1]}")[:600]
    return out
