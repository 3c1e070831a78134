"""The gold stage: ownership intervals, handoffs, episodes, members and metrics of the groups
with new validated events, each run reading the new events and a small carried state, not
the groups' histories.

Two passes. The ownership fold runs per partition (``pipelines.gold.ownership``), on the
partition's facts (``pipelines.gold.facts``) from its state as of the group's ``before_ms``
(``catalog.FOLD_STATE``), so a large group spreads over many tasks and no task holds a
group's history. The group pass (``pipelines.gold.group_pass``) then gives each handoff its
cause and episode and builds the episodes and members, from the group's rebalance events
(a small share of its telemetry, which gold keeps in ``catalog.REBALANCE_EVENTS``) and
handoffs. Metrics are sums over those and the records processed per hour (``catalog.PROCESSED``).

With the broker source on, the group pass also reads each group's history from the broker's log
(``pipelines.gold.broker_input``: the ``silver/broker_*`` rows, struct columns of its input beside
the agent's), which ``broker_gold.with_broker`` prices and merges with the agent's figures; a group
whose history there went on since gold priced it is recomputed as one with new events is, so a
group no agent reports gets gold from the log alone.

``before_ms`` is ``gold_lateness_s`` before the group's newest event: each run folds the
events from there again, so events up to that late still land
in order. A group with a new event older than its state (or with ``since_ms`` set, or
without a state) is refolded from all its events: the same code from an empty state.

What a run writes is bounded by time where the group allows: a group going on from its state
has its handoffs and episodes replaced from its horizon on (``pipelines.gold.horizon``: a
cluster boundary well before the events folded again; the stored rows before it stay), its
ownership from its earliest interval folded again, and its metrics from the day of the earliest
change on, computed from what is then stored; its members and protocol phases (a row per member or
phase) are written whole.

What a run reads is bounded by time too: the pass of a group going on from its state reads its
handoffs and intervals from its window on (``pipelines.gold.pass_window``: its horizon, found in
Spark before the pass), and gives its coverage from the window's hour on; a group whose
window does not hold what its pass needs is read again whole. Its rebalance events (its members'
whole lives) it still reads whole.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial, reduce
from typing import Any

import orjson
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import PipelineConfig, Progress
from pipelines.gold.facts import NEVER, facts, runs, stalled_at, stalls
from pipelines.group_apply import apply_per_group
from pipelines.gold.broker_gold import COVERAGE, EPISODES, history_of, with_broker
from pipelines.gold.broker_input import PRICED_THROUGH, BrokerMark, broker_marks, broker_rows, priced_through, \
    with_new_history
from pipelines.gold import pass_window
from pipelines.gold.group_pass import INTERVAL_FIELDS, KINDS, group_gold
from pipelines.gold.handoffs import handoffs_of
from pipelines.gold.horizon import coverage_from, latest_start
from pipelines.gold.metrics import group_metrics, records_processed
from pipelines.gold.ownership import PartitionFold
from pipelines.scope import GROUP_DDL, Group, events_of, with_new_events

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
GROUP = list(catalog.GROUP_KEY)
TAIL = "_tail"  # the kind of the row that carries a partition's state into its fold
# What the group pass reads: the rebalance events, their envelope and body.
GROUP_KINDS = sorted(KINDS)
ENVELOPE_FOR_LOGIC = ["event_id", "kind", "event_time_ms", "agent_id", "seq", *GROUP, "member_id",
                      "group_instance_id", "client_id", "host", "generation", "group_protocol", "assignor", "body"]
FOLD_INPUTS = ["partitions_change", "first_fetch", "progress", "commit", "state_transition"]
FOLD_ROW_DDL = (f"interval struct<{catalog.OWNERSHIP.ddl(': ')}>, handoff struct<{catalog.HANDOFFS.ddl(': ')}>, "
                f"state struct<{catalog.FOLD_STATE.ddl(': ')}>")
GROUP_OUTPUTS = (("handoff", catalog.HANDOFFS), ("episode", catalog.EPISODES), ("member", catalog.MEMBERS),
                 ("phase", catalog.PROTOCOL_PHASES), ("coverage", catalog.COVERAGE),
                 ("agreement", catalog.SOURCE_AGREEMENT))
# Arrow carries no session time zone out of the workers: the coverage's hour leaves them in ms.
COVERAGE_ROW_DDL = ("cluster_id: string, group_id: string, hour_start_ms: bigint, covered_s: double, owned_s: double, "
                    "broker_covered_s: double")
# A group written from its horizon on (``pipelines.gold.horizon``): the horizon, the earliest episode start from
# it, and when its pass read from its window (``pipelines.gold.pass_window``), the first hour of coverage it gave.
HORIZON_DDL = "cluster_id: string, group_id: string, horizon_ms: bigint, changed_from_ms: bigint, " \
              "coverage_from_ms: bigint"
# A group whose window did not hold what its pass needs: read again whole.
REFOLD_DDL = "cluster_id: string, group_id: string"
GROUP_ROW_DDL = ", ".join([*(f"{name} struct<{COVERAGE_ROW_DDL if table is catalog.COVERAGE else table.ddl(': ')}>"
                             for name, table in GROUP_OUTPUTS), f"horizon struct<{HORIZON_DDL}>",
                           f"refold struct<{REFOLD_DDL}>"])


def spill_path(config: PipelineConfig, name: str = "gold_rows") -> str:
    """Where a pass's rows are spilled while the stage runs (deleted after it)."""
    return f"{config.checkpoint_path}/{name}"


def _marks(spark: SparkSession, config: PipelineConfig, groups: list[Group]) -> dict[Group, tuple[int, list[str]]]:
    """Per group with a state: (before_ms, the agents stalled then)."""
    if not lake.exists(spark, config.lake_path, catalog.FOLD_STATE):
        return {}
    rows = (lake.rows_of(spark, config.lake_path, catalog.FOLD_STATE, GROUP, groups)
            .where(F.col("topic").isNull() & F.col("before_ms").isNotNull())  # null: a group only the broker shows
            .select(*GROUP, "before_ms", "stalled").collect())
    return {(r.cluster_id, r.group_id): (r.before_ms, list(r.stalled or [])) for r in rows}


def _late(spark: SparkSession, config: PipelineConfig, marks: dict[Group, tuple[int, list[str]]],
          high: int) -> set[Group]:
    """The groups with an event validated since gold last ran that is older than their state."""
    if not marks:
        return set()
    after = lake.stage_mark(spark, config.lake_path, "gold")
    before = spark.createDataFrame([(*g, b) for g, (b, _) in marks.items()], f"{GROUP_DDL}, before_ms bigint")
    new = events_of(spark, config, list(marks), high).where(F.col("validate_batch") > after)
    return {tuple(r) for r in new.join(F.broadcast(before), GROUP)
            .where(F.col("event_time_ms") < F.col("before_ms")).select(*GROUP).distinct().collect()}


def _events(spark: SparkSession, config: PipelineConfig, groups: list[Group], high: int) -> DataFrame:
    """``events_of``; none before the first validation (a lake the broker's log alone fills so far)."""
    if high < 0:
        return spark.createDataFrame([], catalog.EVENTS.ddl())
    return events_of(spark, config, groups, high)


def _hour_of(time_ms: int) -> int:
    return time_ms // HOUR_MS * HOUR_MS


def _window(spark: SparkSession, config: PipelineConfig, high: int, full: list[Group],
            marks: dict[Group, tuple[int, list[str]]]) -> DataFrame:
    """The events a run reads: all of a ``full`` group's; a group with a state's from the start of
    the hour of its ``before_ms`` (the fold takes those from ``before_ms`` on, the records
    processed per hour the whole hour)."""
    parts = []
    if full:
        parts.append(_events(spark, config, full, high))
    if marks:
        since = spark.createDataFrame([(*g, _hour_of(b)) for g, (b, _) in marks.items()],
                                      f"{GROUP_DDL}, from_ms bigint")
        low = min(_hour_of(b) for b, _ in marks.values())  # a literal bound, which Delta skips old files by
        parts.append(events_of(spark, config, sorted(marks), high).where(F.col("event_time_ms") >= low)
                     .join(F.broadcast(since), GROUP).where(F.col("event_time_ms") >= F.col("from_ms"))
                     .drop("from_ms"))
    return reduce(DataFrame.unionByName, parts)


def _read_once(spark: SparkSession, config: PipelineConfig, window: DataFrame,
               full: list[Group]) -> AbstractContextManager[DataFrame]:
    """``window`` spilled once when every group continues from its state, so its read is bounded by
    time: the fold's facts (each kind's, and each sum of ``runs``), the stalls, the newest events, the
    records processed and the members' last sight each read it, and each read of the events table
    is a Delta scan with a file-filtering job of its own (18 scans, 20 s of one more hour's gold on
    the eager shape at 30 h). A refold's window, a group's whole history, is read where it lies."""
    return nullcontext(window) if full else lake.spilled(spark, window, spill_path(config, "gold_window"))


def _restored(tail: dict[str, Any]) -> dict[str, Any]:
    """The fold state a ``TAIL`` row carries, its intervals in the row's group: a state kept before
    intervals carried the cluster (``pipelines.migrations``) has none in its JSON."""
    state = orjson.loads(tail["tail"])
    for interval in state["intervals"]:
        interval["cluster_id"] = tail["cluster_id"]
    return state


def fold_partition(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One partition's fold: from its state (a ``TAIL`` row first, if it has one) over its facts in
    order, taking the state to keep as of ``before_ms``; its intervals and handoffs from the state on."""
    head = rows[0]
    fold = PartitionFold(_restored(head) if head["kind"] == TAIL else None)
    before, kept, taken = head["before_ms"], None, False
    for f in rows:
        if f["kind"] == TAIL:
            continue
        if not taken and f["event_time_ms"] >= before:
            kept, taken = fold.state(before), True
            kept = None if kept is None else orjson.dumps(kept).decode()
        fold.feed(f)
    if not taken:
        kept = fold.state(before)
        kept = None if kept is None else orjson.dumps(kept).decode()
    out: list[dict[str, Any]] = [{"interval": row, "handoff": None, "state": None} for row in fold.intervals]
    out += [{"interval": None, "handoff": {**h, "episode_id": None, "episode_start_ms": None, "cause": None,
                                                "unseen_owner": None},
             "state": None} for h in handoffs_of(fold.intervals)]
    if kept is not None:
        out.append({"interval": None, "handoff": None,
                    "state": {"cluster_id": head["cluster_id"], "group_id": head["group_id"], "topic": head["topic"],
                              "partition": head["partition"],
                              "before_ms": before, "tail": kept, "stalled": None, PRICED_THROUGH: None}})
    return out


def _fold_input(spark: SparkSession, config: PipelineConfig, window: DataFrame, stall_rows: DataFrame,
                before: DataFrame, marks: dict[Group, tuple[int, list[str]]]) -> DataFrame:
    """The facts of ``window`` (runs of progress and commits summed) and the stored states of the
    groups in ``marks``, each row with its group's new ``before_ms``."""
    rows = runs(facts(window, stall_rows).join(F.broadcast(before), GROUP)).withColumn(
        "tail", F.lit(None).cast("string"))
    if marks:
        tails = (lake.rows_of(spark, config.lake_path, catalog.FOLD_STATE, GROUP, sorted(marks))
                 .where(F.col("topic").isNotNull())
                 .select(*GROUP, "topic", "partition", F.lit(TAIL).alias("kind"), "tail")
                 .join(F.broadcast(before), GROUP))
        rows = rows.unionByName(tails, allowMissingColumns=True)
    return rows


def _rebalance_events(spark: SparkSession, config: PipelineConfig, groups: list[Group], high: int) -> DataFrame:
    """The groups' rebalance events, all of them: those of the batches validated since gold last
    ran join the ones gold kept (``catalog.REBALANCE_EVENTS``, a small share of the events), so
    the group pass reads no history of the events table."""
    lake_path, table = config.lake_path, catalog.REBALANCE_EVENTS
    if high < 0:
        return spark.createDataFrame([], table.ddl())
    after = lake.stage_mark(spark, lake_path, "gold") if lake.exists(spark, lake_path, table) else -1
    new = (lake.read(spark, lake_path, catalog.EVENTS)
           .where((F.col("validate_batch") > after) & (F.col("validate_batch") <= high)
                  & F.col("kind").isin(GROUP_KINDS))
           .select(*table.column_names()))
    lake.replace_where(spark, lake_path, table, new, f"validate_batch > {int(after)} AND validate_batch <= {int(high)}")
    return lake.rows_of(spark, lake_path, table, GROUP, groups)


def not_superseded(stored: DataFrame, intervals: DataFrame) -> DataFrame:
    """The ``stored`` handoffs whose previous owner's interval this run did not fold again. A
    refolded interval gets its next owner from this run: an event up to ``gold_lateness_s`` late
    can put an owner between two, and the stored handoff that skipped it (its id names the pair
    of intervals by their assign events; a part of a split one, ``unseen``, the pair's) must go."""
    pair = F.regexp_replace("handoff_id", r"^unseen~|~unseen$", "")
    prev = stored.withColumn("_prev", F.substring_index(pair, ">", 1))
    folded = intervals.select(*GROUP, F.col("assign_event_id").alias("_prev"), "topic", "partition")
    return prev.join(folded, [*GROUP, "_prev", "topic", "partition"], "left_anti").drop("_prev")


def newest_rows(stored: DataFrame, new: DataFrame, keys: list[str]) -> DataFrame:
    """``new`` and the ``stored`` rows whose keys it does not have."""
    return new.unionByName(stored.join(new.select(*keys), keys, "left_anti"))


def _stored(spark: SparkSession, config: PipelineConfig, table: catalog.Table, groups: list[Group]) -> DataFrame:
    """The groups' stored rows of ``table``, as declared (a column added since they were written reads null)."""
    return lake.declared(lake.rows_of(spark, config.lake_path, table, GROUP, groups), table)


def _marks_kept(spark: SparkSession, config: PipelineConfig, groups: list[Group],
                high: int) -> dict[Group, tuple[int, list[str]]]:
    """The marks of the groups that continue from their state: none with ``since_ms`` set, and
    none of a group with a late event."""
    marks = {} if config.since_ms is not None else _marks(spark, config, groups)
    for g in _late(spark, config, marks, high):
        del marks[g]
    return marks


@dataclass(frozen=True)
class _Cut:
    """Where each group's fold starts and which state it keeps: the events it folds (from its
    state's ``before_ms``, or all), its new ``before_ms`` and the agents stalled then."""

    before_of: dict[Group, int]
    before: DataFrame  # before_of as a small frame
    to_fold: DataFrame
    stall_rows: DataFrame  # cached: unpersist after the stage
    stalled_then: list[Row]


def _cut(spark: SparkSession, config: PipelineConfig, window: DataFrame, groups: list[Group],
         marks: dict[Group, tuple[int, list[str]]]) -> _Cut:
    """A group's new ``before_ms`` is ``gold_lateness_s`` before its newest event (never before its old one)."""
    lateness_ms = int(config.gold_lateness_s * 1000)
    newest = {(c, g): t for c, g, t in window.groupBy(*GROUP).agg(F.max("event_time_ms")).collect()}
    previous = {g: marks[g][0] if g in marks else NEVER for g in groups}
    before_of = {g: max(previous[g], t - lateness_ms) for g, t in newest.items()}
    before = spark.createDataFrame([(*g, b) for g, b in sorted(before_of.items())], f"{GROUP_DDL}, before_ms bigint")
    folded_from = spark.createDataFrame([(*g, f) for g, f in sorted(previous.items())], f"{GROUP_DDL}, from_ms bigint")
    to_fold = (window.join(F.broadcast(folded_from), GROUP).where(F.col("event_time_ms") >= F.col("from_ms"))
               .drop("from_ms"))
    carried = spark.createDataFrame([(*g, a) for g, (_, agents) in marks.items() for a in agents],
                                    f"{GROUP_DDL}, agent_id string")
    stall_rows = stalls(to_fold, carried).cache()
    stalled_then = stalled_at(stall_rows.join(F.broadcast(before), GROUP), F.col("before_ms")).collect()
    return _Cut(before_of, before, to_fold, stall_rows, stalled_then)


def _fold_rows(spark: SparkSession, config: PipelineConfig, cut: _Cut,
               marks: dict[Group, tuple[int, list[str]]]) -> DataFrame:
    """The ownership fold per partition (``fold_partition``): its intervals, handoffs and states."""
    return apply_per_group(_fold_input(spark, config, cut.to_fold, cut.stall_rows, cut.before, marks),
                           [*GROUP, "topic", "partition"], fold_partition, FOLD_ROW_DDL,
                           order=["event_time_ms", "agent_id", "seq"])


@dataclass(frozen=True)
class _Folded:
    """The fold's output, the groups' stored rows that this run did not fold again joined in,
    when each agent was last seen, and the ownership rows to write: of a group going on from its
    state, those from its earliest interval folded again (``ownership_since``; none: the group's
    ownership is as stored), of the others all."""

    intervals: DataFrame
    handoffs: DataFrame
    states: DataFrame
    seen: DataFrame
    ownership: DataFrame
    ownership_since: dict[Group, int]


def _from_on(spark: SparkSession, rows: DataFrame, since: dict[Group, int], column: Column) -> DataFrame:
    """``rows`` of the groups in ``since`` whose ``column`` is at or after their group's time, and every
    row of the other groups."""
    if not since:
        return rows
    since_frame = spark.createDataFrame([(*g, t) for g, t in sorted(since.items())], f"{GROUP_DDL}, from_ms bigint")
    return (rows.join(F.broadcast(since_frame), GROUP, "left")
            .where(F.col("from_ms").isNull() | (column >= F.col("from_ms"))).drop("from_ms"))


def _with_stored(spark: SparkSession, config: PipelineConfig, folded: DataFrame, window: DataFrame,
                 kept: list[Group]) -> _Folded:
    """``folded``'s rows by table, with the stored rows of the ``kept`` groups (those continuing from their state)."""
    intervals = folded.where(F.col("interval").isNotNull()).select("interval.*")
    handoffs = folded.where(F.col("handoff").isNotNull()).select("handoff.*")
    states = folded.where(F.col("state").isNotNull()).select("state.*")
    refolded, since = intervals, {}
    if kept:
        handoffs = newest_rows(not_superseded(_stored(spark, config, catalog.HANDOFFS, kept), intervals), handoffs,
                               ["handoff_id"])
        keys = [*GROUP, *catalog.OWNERSHIP.keys]
        going_on = set(kept)
        since = {(c, g): t for c, g, t in intervals.groupBy(*GROUP).agg(F.min("assigned_ms")).collect()
                 if (c, g) in going_on}
        if since:
            refolded = newest_rows(_from_on(spark, _stored(spark, config, catalog.OWNERSHIP, sorted(since)), since,
                                            F.col("assigned_ms")), intervals, keys)
        intervals = newest_rows(_stored(spark, config, catalog.OWNERSHIP, kept), intervals, keys)
    seen = window.groupBy(*GROUP, "agent_id").agg(F.max("event_time_ms").alias("ms"))
    if kept:
        seen = (seen.unionByName(_stored(spark, config, catalog.MEMBERS, kept)
                                 .select(*GROUP, "agent_id", F.col("last_seen_ms").alias("ms")))
                .groupBy(*GROUP, "agent_id").agg(F.max("ms").alias("ms")))
    return _Folded(intervals, handoffs, states, seen, refolded, since)


def group_rows(gap_s: float, since_of: dict[Group, int], window_of: dict[Group, int],
               rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The group pass over one group's rows (its rebalance events, handoffs, agents last seen and
    intervals, and its history from the broker's log): its rows of each of ``GROUP_OUTPUTS``, and its
    horizon when it goes on from its fold state (``since_of``: the earliest event it folds again) and
    is written from there on (never with a history in the broker's log, which is priced whole). A group
    in ``window_of`` was read from its window (``pipelines.gold.pass_window``); when that does not hold
    what the pass needs, its one row is a ``refold``."""
    events = [r["event"] for r in rows if r["event"] is not None]
    last_seen = {r["seen"]["agent_id"]: r["seen"]["ms"] for r in rows if r["seen"] is not None}
    key = {c: rows[0][c] for c in GROUP}
    group = (key["cluster_id"], key["group_id"])
    intervals = [r["interval"] for r in rows if r["interval"] is not None]
    history = history_of(rows)
    since = since_of.get(group) if history is None else None
    empty = dict.fromkeys([*(name for name, _ in GROUP_OUTPUTS), "horizon", "refold"])
    gold = group_gold(events, [r["handoff"] for r in rows if r["handoff"] is not None], last_seen, gap_s,
                      intervals, since, window_of.get(group))
    if gold is None:
        return [{**empty, "refold": key}]
    *agent, at = gold
    outputs = with_broker(tuple(agent), history, gap_s, key["cluster_id"], key["group_id"],
                          {i["member_id"] for i in intervals})
    outputs[COVERAGE][:] = [{**key, **c} for c in outputs[COVERAGE]]
    out = [{**empty, name: row} for (name, _), made in zip(GROUP_OUTPUTS, outputs) for row in made]
    if at is not None:
        starts = [e["start_ms"] for e in outputs[EPISODES]]
        out.append({**empty, "horizon": {**key, "horizon_ms": at, "changed_from_ms": min([at, *starts]),
                                         "coverage_from_ms": coverage_from(at) if group in window_of else None}})
    return out


def _group_input(spark: SparkSession, rebalance_events: DataFrame, fold: _Folded, broker: DataFrame | None,
                 windows: dict[Group, int]) -> DataFrame:
    """One frame of what the group pass reads, each kind of row in a struct column of its own
    (``broker``'s: ``pipelines.gold.broker_input.broker_rows``); the handoffs and intervals of a group in
    ``windows`` from its window on."""
    handoffs = pass_window.handoffs_from(spark, fold.handoffs, windows)
    rows = (rebalance_events.select(*GROUP, F.struct(*ENVELOPE_FOR_LOGIC).alias("event"))
            .unionByName(handoffs.select(*GROUP, F.struct(*handoffs.columns).alias("handoff")),
                         allowMissingColumns=True)
            .unionByName(fold.seen.select(*GROUP, F.struct("agent_id", "ms").alias("seen")),
                         allowMissingColumns=True)
            .unionByName(pass_window.intervals_from(spark, fold.intervals, windows)
                         .select(*GROUP, F.struct(*INTERVAL_FIELDS).alias("interval")),
                         allowMissingColumns=True))
    return rows if broker is None else rows.unionByName(broker, allowMissingColumns=True)


def _windows(spark: SparkSession, config: PipelineConfig, rebalance_events: DataFrame, since_of: dict[Group, int],
             broker: dict[Group, BrokerMark]) -> dict[Group, int]:
    """Where the pass reads each group that goes on from its state from (``pipelines.gold.pass_window``):
    not a group the broker's log shows, nor one with a part of a handoff across an owner without the agent
    stored."""
    going_on = sorted(g for g in since_of if g not in broker)
    if not going_on:
        return {}
    unseen = {tuple(r) for r in _stored(spark, config, catalog.HANDOFFS, going_on)
              .where(F.col("unseen_owner")).select(*GROUP).distinct().collect()}
    gap_s = config.episode_gap_s
    return pass_window.starts(spark, rebalance_events,
                              {g: latest_start(since_of[g], gap_s) for g in going_on if g not in unseen}, gap_s)


@contextmanager
def _group_pass(spark: SparkSession, config: PipelineConfig, rebalance_events: DataFrame, fold: _Folded,
                broker: DataFrame | None, since_of: dict[Group, int], windows: dict[Group, int]
                ) -> Iterator[tuple[DataFrame, int]]:
    """The group pass's rows (``group_rows``), spilled: a group read from its window, and a group its
    window did not hold what the pass needs of read again whole; how many were."""
    def passed(rows: DataFrame, window_of: dict[Group, int], name: str) -> AbstractContextManager[DataFrame]:
        return lake.spilled(spark, apply_per_group(rows, GROUP, partial(group_rows, config.episode_gap_s, since_of,
                                                                       window_of), GROUP_ROW_DDL),
                            spill_path(config, name))

    with passed(_group_input(spark, rebalance_events, fold, broker, windows), windows, "gold_groups") as grouped:
        again = [tuple(r) for r in grouped.where(F.col("refold").isNotNull()).select("refold.*").collect()]
        if not again:
            yield grouped, 0
            return
        whole = _group_input(spark, rebalance_events, fold, broker, {}).join(
            F.broadcast(spark.createDataFrame(sorted(again), GROUP_DDL)), GROUP)
        with passed(whole, {}, "gold_groups_whole") as redone:
            yield grouped.where(F.col("refold").isNull()).unionByName(redone), len(again)


def _processed(spark: SparkSession, config: PipelineConfig, window: DataFrame,
               marks: dict[Group, tuple[int, list[str]]]) -> DataFrame:
    """The records processed per hour: this run's hours, and the stored ones before them."""
    processed = records_processed(window)
    kept = sorted(marks)
    if kept:
        since = spark.createDataFrame([(*g, _hour_of(marks[g][0])) for g in kept], f"{GROUP_DDL}, from_ms bigint")
        processed = processed.unionByName(
            _stored(spark, config, catalog.PROCESSED, kept).join(F.broadcast(since), GROUP)
            .where(F.col("hour_start") < F.timestamp_millis("from_ms")).drop("from_ms"))
    return processed


def _coverage_changed(spark: SparkSession, config: PipelineConfig, coverage: DataFrame, groups: list[Group],
                      given_from: dict[Group, int]) -> dict[Group, int]:
    """Per group of ``groups``, the first hour whose coverage ``coverage`` (the group pass's: whole, or of a
    group in ``given_from`` from that hour on) changes from the stored one: a new owner's heartbeat,
    partition or last sight can reach back before a horizon."""
    if not groups or not lake.exists(spark, config.lake_path, catalog.COVERAGE):
        return {}
    values = ["covered_s", "owned_s", "broker_covered_s"]
    stored = _from_on(spark, _stored(spark, config, catalog.COVERAGE, groups), given_from,
                      F.unix_millis("hour_start")).select(*GROUP, "hour_start",
                                                          *[F.col(c).alias(f"_{c}") for c in values])
    new = coverage.join(F.broadcast(spark.createDataFrame(groups, GROUP_DDL)), GROUP)
    same = reduce(lambda a, b: a & b, [F.col(c).eqNullSafe(F.col(f"_{c}")) for c in values])
    return {(c, g): t for c, g, t in new.join(stored, [*GROUP, "hour_start"], "full_outer").where(~same)
            .groupBy(*GROUP).agg(F.unix_millis(F.min("hour_start"))).collect()}


def _metrics_from(horizons: dict[Group, tuple[int, int]], since_of: dict[Group, int],
                  coverage_changed: dict[Group, int]) -> dict[Group, int]:
    """Per group written from its horizon, the day from which its metrics can change: its earliest episode
    from the horizon on, the first hour of records processed read again, the first hour of changed coverage."""
    return {g: min(changed, _hour_of(since_of[g]), coverage_changed.get(g, changed)) // DAY_MS * DAY_MS
            for g, (_, changed) in horizons.items()}


def _kept(spark: SparkSession, config: PipelineConfig, table: catalog.Table, at: dict[Group, int], column: Column,
          low: dict[Group, int], low_column: Column) -> DataFrame:
    """The stored rows of ``table`` that a write from the groups' times ``at`` keeps (``column`` before it),
    from ``low`` on (``low_column``)."""
    bounds = spark.createDataFrame([(*g, at[g], low[g]) for g in sorted(at)], f"{GROUP_DDL}, _at bigint, _low bigint")
    return (_stored(spark, config, table, sorted(at)).join(F.broadcast(bounds), GROUP)
            .where((column < F.col("_at")) & (low_column >= F.col("_low"))).drop("_at", "_low"))


@dataclass(frozen=True)
class _KeptRows:
    """The stored rows the metrics of groups written from their horizons read beside the new ones."""

    handoffs: DataFrame
    episodes: DataFrame
    coverage: DataFrame | None  # of the groups whose pass gave their coverage from an hour on


@contextmanager
def _kept_rows(spark: SparkSession, config: PipelineConfig, at: dict[Group, int], since: dict[Group, int],
               coverage_at: dict[Group, int]) -> Iterator[_KeptRows | None]:
    """The stored handoffs and episodes the groups written from their horizons (``at``) keep, from an hour
    before their metrics' day (``since``) on (a revoke counts in its first handoff's episode), spilled: read
    before the writes replace them, so the metrics can be computed beside those writes; and the stored
    coverage from that day to the hour a group's new coverage starts (``coverage_at``), which no write replaces."""
    if not at:
        yield None
        return
    low = {g: since[g] - HOUR_MS for g in at}
    coverage = None
    if coverage_at:
        hour = F.unix_millis("hour_start")
        coverage = _kept(spark, config, catalog.COVERAGE, coverage_at, hour, {g: since[g] for g in coverage_at}, hour)
    with lake.spilled(spark, _kept(spark, config, catalog.HANDOFFS, at, F.col("assigned_ms"), low,
                                   F.col("episode_start_ms")),
                      spill_path(config, "gold_kept_handoffs")) as handoffs, \
            lake.spilled(spark, _kept(spark, config, catalog.EPISODES, at, F.col("end_ms"), low, F.col("start_ms")),
                         spill_path(config, "gold_kept_episodes")) as episodes:
        yield _KeptRows(handoffs, episodes, coverage)


def _metrics(spark: SparkSession, of: dict[str, DataFrame], hours: DataFrame, kept: _KeptRows | None,
             since: dict[Group, int]) -> DataFrame:
    """The groups' metrics, from their new rows and the ``kept`` ones: of a group in ``since`` (written from its
    horizon), the periods from its day on."""
    handoffs, episodes, coverage = of["handoff"], of["episode"], of["coverage"]
    if kept is not None:
        handoffs, episodes = handoffs.unionByName(kept.handoffs), episodes.unionByName(kept.episodes)
        if kept.coverage is not None:
            coverage = coverage.unionByName(kept.coverage.select(*coverage.columns))
    return _from_on(spark, group_metrics(handoffs, episodes, hours, coverage), since, F.unix_millis("period_start"))


def _write_gold(spark: SparkSession, config: PipelineConfig, grouped: DataFrame, fold: _Folded,
                processed: DataFrame, groups: list[Group], since_of: dict[Group, int]) -> dict[str, int]:
    """Replace the groups' ownership, group pass tables, records processed and metrics, side by side
    (``lake.land_together``); the rows per output. A group written from its horizon (``since_of``: going on
    from its state) has its handoffs and episodes replaced from there on, its coverage from the hour its pass
    gave it from (read from its window), its metrics from the day of the earliest change."""
    of = {name: grouped.where(F.col(name).isNotNull()).select(f"{name}.*") for name, _ in GROUP_OUTPUTS}
    of["coverage"] = of["coverage"].select(*GROUP, F.timestamp_millis("hour_start_ms").alias("hour_start"),
                                           "covered_s", "owned_s", "broker_covered_s")
    found = grouped.where(F.col("horizon").isNotNull()).select("horizon.*").collect()
    horizons = {(r.cluster_id, r.group_id): (r.horizon_ms, r.changed_from_ms) for r in found}
    hour_from = {(r.cluster_id, r.group_id): r.coverage_from_ms for r in found if r.coverage_from_ms is not None}
    at = {g: h for g, (h, _) in horizons.items()}
    since = {catalog.OWNERSHIP: (fold.ownership_since, "assigned_ms"), catalog.HANDOFFS: (at, "assigned_ms"),
             catalog.EPISODES: (at, "end_ms"), catalog.COVERAGE: (hour_from, "hour_start")}
    scope = {catalog.OWNERSHIP: [g for g in groups if g not in since_of or g in fold.ownership_since]}
    days = _metrics_from(horizons, since_of,
                         _coverage_changed(spark, config, of["coverage"], sorted(horizons), hour_from))
    since[catalog.METRICS] = (days, "period_start")
    with lake.spilled(spark, processed, spill_path(config, "gold_processed")) as hours, \
            _kept_rows(spark, config, at, days, hour_from) as kept:
        tables = [(catalog.OWNERSHIP, fold.ownership), *((table, of[name]) for name, table in GROUP_OUTPUTS),
                  (catalog.PROCESSED, hours), (catalog.METRICS, _metrics(spark, of, hours, kept, days))]
        lake.land_together([partial(lake.replace_scope, spark, config.lake_path, table, rows,
                                    scope.get(table, groups), *since.get(table, (None, None)))
                            for table, rows in tables])
    return {**grouped.agg(*[F.count(name).alias(f"{name}s") for name, _ in GROUP_OUTPUTS],
                          F.count("horizon").alias("from_horizon")).first().asDict(), "from_window": len(hour_from)}


def _write_states(spark: SparkSession, config: PipelineConfig, states: DataFrame, cut: _Cut,
                  groups: list[Group], broker: dict[Group, BrokerMark]) -> None:
    """Replace the groups' fold states: each partition's, and the group's ``before_ms`` with the agents
    stalled then and the broker's last record of it priced."""
    stalled: dict[Group, list[str]] = {}
    for r in cut.stalled_then:
        stalled.setdefault((r.cluster_id, r.group_id), []).append(r.agent_id)
    group_states = spark.createDataFrame(
        [(*g, None, None, cut.before_of.get(g), None,
          sorted(stalled.get(g, [])) if g in cut.before_of else None,
          broker[g].through_offset if g in broker else None)
         for g in groups if g in cut.before_of or g in broker], catalog.FOLD_STATE.ddl())
    lake.replace_scope(spark, config.lake_path, catalog.FOLD_STATE, states.unionByName(group_states), groups)


@dataclass(frozen=True)
class _Scope:
    """What a run recomputes: the groups with events validated since gold last ran (up to ``high``, the
    last passed batch: -1 before the first) and those whose history in the broker's log went on."""

    high: int
    groups: list[Group]
    broker: dict[Group, BrokerMark]  # every group the broker's log shows


def _scope(spark: SparkSession, config: PipelineConfig, progress: Progress) -> _Scope | None:
    """This run's scope (said through ``progress``); None when there is nothing to do."""
    high, with_events = with_new_events(spark, config, "gold")
    broker = broker_marks(spark, config)
    went_on = with_new_history(broker, priced_through(spark, config.lake_path)) if broker else []
    groups = sorted({*with_events, *went_on})
    if not groups:
        progress("gold: no new events" + (", no new history in the broker's log" if broker else "")
                 + ("" if high >= 0 else " (no events validated yet)") + "; nothing to do")
        return None
    progress(f"gold: recomputing {len(groups)} group(s): {len(with_events)} with new events"
             + (f", {len(went_on)} with new history in the broker's log (of {len(broker)} it shows)" if broker else ""))
    return _Scope(high, groups, broker)


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """Gold for the groups with events validated since gold last ran, from their fold states, and
    those whose broker history went on (``pipelines.gold.broker_input``)."""
    scope = _scope(spark, config, progress)
    if scope is None:
        return {"groups": 0}
    high, groups = scope.high, scope.groups
    marks = _marks_kept(spark, config, groups, high)
    full = [g for g in groups if g not in marks]
    progress(f"gold: {len(marks)} group(s) from their state, {len(full)} from all their events")
    window = _window(spark, config, high, full, marks).select(
        *GROUP, "kind", "event_id", "event_time_ms", "agent_id", "seq", "member_id", "group_instance_id", "host",
        "client_id", "generation", *FOLD_INPUTS)
    with _read_once(spark, config, window, full) as window:
        cut = _cut(spark, config, window, groups, marks)
        with lake.spilled(spark, _fold_rows(spark, config, cut, marks), spill_path(config, "gold_fold")) as folded:
            fold = _with_stored(spark, config, folded, window, sorted(marks))
            rebalance_events = _rebalance_events(spark, config, groups, high)
            since_of = {g: before for g, (before, _) in marks.items()}
            windows = _windows(spark, config, rebalance_events, since_of, scope.broker)
            with _group_pass(spark, config, rebalance_events, fold, broker_rows(spark, config, groups, scope.broker),
                             since_of, windows) as (grouped, read_again):
                counts = _write_gold(spark, config, grouped, fold, _processed(spark, config, window, marks), groups,
                                     since_of)
            if counts["from_horizon"] or read_again:
                progress(f"gold: {counts['from_horizon']} group(s) written from their horizon on "
                         f"(their handoffs and episodes before it stay as stored), {counts['from_window']} of them "
                         f"read from it; {read_again} read again whole (their window did not hold what they need)")
            _write_states(spark, config, fold.states, cut, groups, scope.broker)
        cut.stall_rows.unpersist()
    if high >= 0:
        lake.set_stage_mark(spark, config.lake_path, "gold", high)
    return {"groups": len(groups), "from_state": len(marks), "refolded": len(full),
            "broker_groups": sum(g in scope.broker for g in groups), "read_again": read_again, **counts}
