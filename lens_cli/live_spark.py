"""Spark work on a terminal: a spinner while the JVM starts, then for long work its lines as
they come and a live line with the elapsed time and Spark's task counter, so a minute-long
stage visibly moves. The JVM's own console goes to a log file (``build_spark``); its path is
printed once.

Off a terminal (CI logs, pipes) only the lines are printed: no spinner frames in a log file.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from pyspark.sql import SparkSession
from rich.console import Console
from rich.markup import escape

from lens_runtime.spark_session import SparkSettings, build_spark, spark_log
from pipelines.config import PipelineConfig
from pipelines.stages import resolve_stages, run_stage

POLL_S = 0.5


def start_spark(settings: SparkSettings, console: Console) -> SparkSession:
    """``build_spark`` behind a spinner; says where the JVM's log is."""
    with console.status("starting Spark ..."):
        spark = build_spark(settings)
    console.print(f"[dim]Spark's log: {escape(spark_log(spark))}[/]", soft_wrap=True)
    return spark


def spark_tasks(spark: SparkSession) -> str:
    """``Spark tasks 37/80`` over the running stages, or nothing when none runs."""
    tracker = spark.sparkContext.statusTracker()
    infos = [i for i in (tracker.getStageInfo(s) for s in tracker.getActiveStageIds()) if i is not None]
    if not infos:
        return ""
    return f"Spark tasks {sum(i.numCompletedTasks for i in infos)}/{sum(i.numTasks for i in infos)}"


@contextmanager
def live(spark: SparkSession, console: Console, label: str) -> Iterator[Callable[[str], None]]:
    """A live line (``label``, elapsed time, Spark's tasks) while the block runs; yields the
    function that prints a line above it."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    if not console.is_terminal:  # a log gets the lines only
        yield lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
               TextColumn("{task.fields[tasks]}", style="dim"))
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(escape(label), tasks="")
        done = threading.Event()

        def poll() -> None:
            while not done.wait(POLL_S):
                bar.update(task, tasks=spark_tasks(spark))

        poller = threading.Thread(target=poll, name="spark-progress", daemon=True)
        poller.start()
        try:
            yield lambda line: bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
        finally:
            done.set()
            poller.join()


def run_stages(spark: SparkSession, config: PipelineConfig, stages: Sequence[str],
               console: Console) -> dict[str, dict[str, int]]:
    """``run_pipeline`` with a live line per stage; returns each stage's counts."""
    results: dict[str, dict[str, int]] = {}
    for stage in resolve_stages(stages):
        with live(spark, console, f"[{stage}] running") as say:
            results[stage] = run_stage(spark, config, stage, progress=lambda line: say(f"  {line}"))
    return results
