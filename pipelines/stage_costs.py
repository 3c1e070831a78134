"""What a stage costs beyond its data: its Spark jobs, its Delta commits and files, its set-up time.

A small run is mostly fixed cost (a job's scheduling, a commit's log write, dbt's start), and a
fixed cost is only fixable once it has a name and a count. ``StageCosts`` is the instrument; it
follows the stage runner's own progress lines (``[gold] starting`` ... ``[gold] done in``), so it
measures each stage from outside its code, any version of it (a benchmark's baseline commit
included), and a caller that wants the figures wraps its progress:
``run_pipeline(spark, config, progress=StageCosts(spark, lake_path).following(print))`` prints a
``[gold] cost: ...`` line after each stage's own. It reads what Spark and Delta record anyway:

- Spark jobs: the ids Spark's status tracker lists that are new since the stage began, and each
  job's submission and completion times from the status store the tracker reads (the one Spark's
  own listener fills; no listener of ours on the event bus);
- set-up: from the stage's start to its first job (session work, Delta log reads, dbt's start);
  in jobs: the time at least one of its jobs ran; the rest of the wall time ran on the driver
  between jobs (planning, commits, Python);
- Delta commits per table and the data files they added: the new commit files in each table's
  ``_delta_log`` (the lake's tables and the marts), read through Hadoop's file system.

Measuring costs a listing of each table's log before and after the stage and a look at each new
job and commit: milliseconds, and nothing when no one asks.
"""
from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from pipelines import catalog
from pipelines.config import Progress

# The stage runner's lines (pipelines.stages._run) around each stage.
STARTING = re.compile(r"^\[(\w+)\] starting$")
DONE = re.compile(r"^\[(\w+)\] done in ")


@dataclass
class StageCost:
    """One stage's run: wall seconds, Spark jobs, Delta commits (per table) and data files added."""

    stage: str
    wall_s: float = 0.0
    jobs: int = 0
    setup_s: float = 0.0  # start to its first Spark job (the whole stage when it ran none)
    in_jobs_s: float = 0.0  # time with at least one of its jobs running
    job_kinds: Counter[str] = field(default_factory=Counter)  # what each job was (Delta's description, else Spark's)
    commits: dict[str, int] = field(default_factory=dict)  # table (lake-relative path) -> commits
    operations: dict[str, list[str]] = field(default_factory=dict)  # table -> Delta operation per commit
    files: int = 0  # data files the commits added

    @property
    def driver_s(self) -> float:
        """Wall time after set-up with no job of the stage running: the driver's own work."""
        return max(0.0, self.wall_s - self.setup_s - self.in_jobs_s)

    def line(self) -> str:
        tables = ", ".join(f"{path} {n}" + (f" ({'+'.join(ops)})" if (ops := self.operations.get(path)) else "")
                           for path, n in sorted(self.commits.items()))
        return (f"{self.wall_s:.1f} s: set-up {self.setup_s:.1f} s, {self.jobs} Spark jobs running "
                f"{self.in_jobs_s:.1f} s, driver {self.driver_s:.1f} s; {sum(self.commits.values())} Delta commits"
                + (f" ({tables})" if tables else "") + f", {self.files} files written")


class StageCosts:
    """Measures the stages run under ``measure``; ``costs[stage]`` is the last run of each."""

    def __init__(self, spark: SparkSession, lake_path: str) -> None:
        self._spark = spark
        self._lake = lake_path.rstrip("/")
        self._jvm = spark.sparkContext._jvm
        self._fs_conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.costs: dict[str, StageCost] = {}
        self._open: dict[str, tuple[StageCost, set[int], dict[str, int], float, float]] = {}

    def __getitem__(self, stage: str) -> StageCost:
        return self.costs[stage]

    @contextmanager
    def measure(self, stage: str) -> Iterator[StageCost]:
        """Measure the block as ``stage``."""
        self.begin(stage)
        try:
            yield self._open[stage][0]
        finally:
            self.end(stage)

    def begin(self, stage: str) -> None:
        self._open[stage] = (StageCost(stage), self._job_ids(), self._versions(), time.time() * 1000,
                             time.monotonic())

    def end(self, stage: str) -> StageCost:
        cost, jobs_before, versions_before, started_ms, started = self._open.pop(stage)
        cost.wall_s = time.monotonic() - started
        self._count_jobs(cost, jobs_before, started_ms)
        self._count_commits(cost, versions_before)
        self.costs[stage] = cost
        return cost

    def following(self, progress: Progress) -> Progress:
        """``progress`` that measures each stage between the runner's lines around it and says its cost after it."""
        def follow(message: str) -> None:
            if found := STARTING.match(message):
                self.begin(found[1])
            progress(message)
            if (found := DONE.match(message)) and found[1] in self._open:
                progress(f"[{found[1]}] cost: {self.end(found[1]).line()}")
        return follow

    # --- Spark jobs -----------------------------------------------------------------------------

    def _job_ids(self) -> set[int]:
        """The jobs Spark's status tracker still lists (``spark.ui.retainedJobs``, 1,000 by default)."""
        return set(self._spark.sparkContext.statusTracker().getJobIdsForGroup(None))

    def _count_jobs(self, cost: StageCost, before: set[int], started_ms: float) -> None:
        """The jobs since ``before`` (ids are sequential: the count holds even when the store dropped some)."""
        ids = self._job_ids() - before
        cost.jobs = max(ids) - max(before, default=-1) if ids else 0
        seen = [self._job(job_id) for job_id in ids]
        cost.job_kinds = Counter(kind for kind, _ in seen)
        spans = sorted(span for _, span in seen if span is not None)
        cost.setup_s = (spans[0][0] - started_ms) / 1000 if spans else cost.wall_s
        busy_ms, reach = 0.0, started_ms
        for begin, end in spans:  # the union of the jobs' intervals
            busy_ms += max(0.0, end - max(begin, reach))
            reach = max(reach, end)
        cost.in_jobs_s = busy_ms / 1000

    def _job(self, job_id: int) -> tuple[str, tuple[float, float] | None]:
        """A job's kind and, when it finished, its (submitted, completed) epoch milliseconds, from
        Spark's status store (the one its listener fills)."""
        try:
            job = self._spark.sparkContext._jsc.sc().statusStore().job(job_id)
        except Exception:  # dropped from the store since it was listed
            return "?", None
        described = job.description()
        kind = job_kind(str(described.get()) if described.isDefined() else str(job.name()))
        submitted, completed = job.submissionTime(), job.completionTime()
        if not (submitted.isDefined() and completed.isDefined()):
            return kind, None
        return kind, (float(submitted.get().getTime()), float(completed.get().getTime()))

    # --- Delta commits --------------------------------------------------------------------------

    def _tables(self) -> list[str]:
        """Lake-relative paths of the tables a stage may write: the catalog's and the marts."""
        paths = [t.path for t in (*catalog.TABLES, *catalog.CLOSED_LOOP_TABLES)]
        marts = self._path(f"{self._lake}/marts")
        fs = marts.getFileSystem(self._fs_conf)
        if fs.exists(marts):
            paths += [f"marts/{s.getPath().getName()}" for s in fs.listStatus(marts) if s.isDirectory()]
        return paths

    def _path(self, text: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(text)

    def _log(self, table: str) -> Any:
        return self._path(f"{self._lake}/{table}/_delta_log")

    def _versions(self) -> dict[str, int]:
        out = {}
        for table in self._tables():
            log = self._log(table)
            fs = log.getFileSystem(self._fs_conf)
            names = [s.getPath().getName() for s in fs.listStatus(log)] if fs.exists(log) else []
            out[table] = max((int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()), default=-1)
        return out

    def _count_commits(self, cost: StageCost, before: dict[str, int]) -> None:
        for table, version in self._versions().items():
            new = range(before.get(table, -1) + 1, version + 1)
            if not new:
                continue
            cost.commits[table] = len(new)
            actions = [self._actions(table, v) for v in new]
            cost.operations[table] = [next((a["commitInfo"].get("operation", "?") for a in commit
                                            if "commitInfo" in a), "?") for commit in actions]
            cost.files += sum(files_added(commit) for commit in actions)

    def _actions(self, table: str, version: int) -> list[dict[str, Any]]:
        path = self._path(f"{self._lake}/{table}/_delta_log/{version:020d}.json")
        stream = path.getFileSystem(self._fs_conf).open(path)
        try:
            text = self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def job_kind(text: str) -> str:
    """A job's description as a kind: its first line, numbers and quoted text left out
    (``Delta: Compute snapshot for version: #``, ``collect at <unknown>:0``)."""
    line = (text.splitlines() or ["?"])[0]
    return re.sub(r"\d+", "#", re.sub(r"'[^']*'|`[^`]*`", "…", line))[:90]


def files_added(actions: list[dict[str, Any]]) -> int:
    """Data files a commit wrote: its ``add`` actions, less the files it only re-adds with a
    deletion vector (rows marked deleted, the file itself unchanged)."""
    removed = {a["remove"]["path"] for a in actions if "remove" in a}
    return sum(1 for a in actions if "add" in a and a["add"]["path"] not in removed)
