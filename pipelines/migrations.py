"""Renamed columns, migrated in place on an existing lake: what the older names became
(``pipelines.measures`` is the vocabulary they moved to), as data, and the two steps that
apply it.

- A gold table written under older names is rewritten with the new ones (``migrate``): one
  Delta commit per table (overwriteSchema of a select with the renames), in its layout, so a
  reader sees the old table or the new one. Gold is derived, but a rename costs one rewrite,
  where recomputing it costs a replay of every event. Text that spoke the older names (the
  recommendations' stored evidence SQL) is rewritten in the same commit.
- A mart (``marts/<model>``) under older names is rebuilt whole by the next SQL build
  (``stale_marts`` names them; ``pipelines.sql_build`` passes them to dbt as ``rebuild``).
- A gold table written before the broker source (handoffs, episodes) gets its ``source`` column
  ("agent" in the rows before: they were all the agent's) and a handoff's ``cause_confidence``
  ("exact": read from telemetry), and gold/episodes written before the client's rebalance timings
  gets their columns (the join steps null, ``phase_source`` the agents' states wherever the episode
  had phases: the only source there was), in one rewrite per table (``with_added``, ``_fill``); the
  log's estimates and stop windows read null there. Other tables take the broker's columns at their
  next write, marts new columns at their next incremental build.
- A table written before its group key gained the cluster (``catalog.GROUP_KEY``) gets the
  ``cluster_id`` column, every stored row ``contract.CLUSTER_UNKNOWN`` (``with_cluster``), in one
  rewrite per table: those rows came from agents that did not send the cluster id, exactly what
  an event without one reads as, so the groups they held stay one group each with the events
  such agents still send, and a key column is never null (a null joins and matches nothing).
  Marts missing it are rebuilt (``stale_marts``).

- Marts that carry the handoffs' estimates (``catalog.ESTIMATES``) and their ``source``, stored
  before them, are rebuilt whole (``stale_marts``); gold/handoffs gets the estimates in place from
  gold's own arithmetic (``pipelines.gold.upgrade``, which the runner and the SQL build call after these).
- A table the SQL build reads before a stage may write it again (``ADDED_IN_PLACE``: the closed
  loop's, gold's metrics, coverage and recommendations) gets its declaration's new columns in
  place, metadata only, null in the rows before.

Both run under the lake's lock: the first stage or SQL build that opens an older lake applies
them, each printing one line per table saying what changed; a lake already current costs a
look at each table's schema. Idempotent: a migration applies only while its table still has
an older column, so a run killed between tables is finished by the next one.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from consumer_agent.contract import CLUSTER_UNKNOWN
from pipelines import catalog, lake
from pipelines.config import Progress
from pipelines.vocabulary import AGENT_STATES

POINT_FIGURE_PAUSE = "now the point figure: a bounded pause counts its lower bound, where it counted 0"


@dataclass(frozen=True)
class Rename:
    """A column's older name and its new one (its values as they are)."""

    old: str
    new: str
    note: str | None = None  # what changed beyond the name (a mart rebuilt with a changed figure)

    def said(self) -> str:
        return f"{self.old} -> {self.new}" + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Rewrite:
    """A text column whose values spoke the older names (the recommendations' evidence SQL):
    each older fragment replaced by what it reads now."""

    column: str
    replaced: tuple[tuple[str, str], ...]

    def apply(self, text: str) -> str:
        for old, new in self.replaced:
            text = text.replace(old, new)
        return text

    def of(self, column: Column) -> Column:
        for old, new in self.replaced:
            column = F.replace(column, F.lit(old), F.lit(new))
        return column


@dataclass(frozen=True)
class Migration:
    """What became of one table's older columns; ``dropped``: older columns with no new one."""

    path: str  # in the lake: "gold/handoffs", "marts/group_hourly_costs"
    renames: tuple[Rename, ...]
    dropped: tuple[str, ...] = ()
    dropped_why: str = ""
    rewrites: tuple[Rewrite, ...] = ()  # applied with the renames

    def applies_to(self, columns: Iterable[str]) -> bool:
        """The table still has an older column (a migrated table has none)."""
        stored = set(columns)
        return any(r.old in stored for r in self.renames) or any(c in stored for c in self.dropped)

    def said(self, verb: str = "") -> str:
        """The one line this migration prints."""
        parts = ", ".join(r.said() for r in self.renames)
        if self.rewrites:
            parts += f"; {', '.join(w.column for w in self.rewrites)} rewritten in the new names"
        if self.dropped:
            parts += f"; dropped {', '.join(self.dropped)}" + (f" ({self.dropped_why})" if self.dropped_why else "")
        return f"{self.path}: {verb}{parts}"


def _renamed(pairs: str, note: dict[str, str] | None = None) -> tuple[Rename, ...]:
    """``"old new, old new"`` as renames (``note``: by old name)."""
    out = []
    for pair in pairs.split(","):
        old, new = pair.split()
        out.append(Rename(old, new, (note or {}).get(old)))
    return tuple(out)


# The evidence queries the older recommend stage wrote (pipelines/recommend/rules.py's Q_COST_BY_CAUSE
# and Q_WHAT_IF), in the new names: a stored recommendation's query runs on the migrated tables.
EVIDENCE_QUERY = Rewrite("evidence_query", (
    ("sum(coalesce(duplicates_confirmed, duplicates_lower)) AS duplicates, "
     "sum(coalesce(duplicates_confirmed, duplicates_upper)) AS duplicates_upper, "
     "sum(coalesce(unavailable_s, unavailable_lower_s)) AS paused_partition_s ",
     "sum(duplicates) AS duplicates, sum(duplicates_upper) AS duplicates_upper, sum(pause_s) AS pause_s, "
     "sum(pause_upper_s) AS pause_upper_s "),
    ("SELECT config, rebalances, handoffs, partitions_moved, duplicates, pause_s, duplicates_saved, pause_saved_s ",
     "SELECT config, predicted_rebalances, predicted_handoffs, predicted_partitions_moved, predicted_duplicates, "
     "predicted_pause_s, predicted_duplicates_saved, predicted_pause_saved_s "),
    ("ORDER BY duplicates_saved DESC", "ORDER BY predicted_duplicates_saved DESC"),
))

# Gold wrote its lower bounds equal to the exact figure where there was one, so each lower bound
# column is the point figure (pipelines.measures.point_figure) as it stands.
GOLD: tuple[Migration, ...] = (
    Migration(catalog.HANDOFFS.path, _renamed(
        "unavailable_lower_s pause_s, unavailable_upper_s pause_upper_s, duplicates_lower duplicates, "
        "duplicates_estimated uncommitted_at_revoke"),
        dropped=("unavailable_s", "duplicates_confirmed"),
        dropped_why="exact ones are where pause_s = pause_upper_s, duplicates = duplicates_upper"),
    Migration(catalog.METRICS.path, _renamed(
        "partition_seconds_unavailable_lower pause_s, partition_seconds_unavailable_upper pause_upper_s"),
        dropped=("partition_seconds_unavailable",), dropped_why="the sum of exact pauses only"),
    Migration(catalog.WHAT_IF.path, _renamed(
        "rebalances predicted_rebalances, handoffs predicted_handoffs, partitions_moved predicted_partitions_moved, "
        "duplicates predicted_duplicates, pause_s predicted_pause_s, duplicates_saved predicted_duplicates_saved, "
        "pause_saved_s predicted_pause_saved_s")),
    Migration(catalog.RECOMMENDATIONS.path, _renamed(
        "duplicates_before predicted_duplicates_before, duplicates_after predicted_duplicates_after, "
        "duplicates_saved predicted_duplicates_saved, duplicates_saved_pct predicted_duplicates_saved_pct, "
        "pause_before_s predicted_pause_before_s, pause_after_s predicted_pause_after_s, "
        "pause_saved_s predicted_pause_saved_s, pause_saved_pct predicted_pause_saved_pct"),
        rewrites=(EVIDENCE_QUERY,)),
    Migration(catalog.VERIFICATIONS.path, _renamed(
        "duplicates_before measured_duplicates_before, duplicates_after measured_duplicates_after, "
        "pause_before_s measured_pause_before_s, pause_after_s measured_pause_after_s")),
)

_PAUSE = {"paused_partition_s": POINT_FIGURE_PAUSE}
_COSTS = "paused_partition_s pause_s, paused_partition_s_upper pause_upper_s"
MARTS: tuple[Migration, ...] = (
    *(Migration(f"marts/{name}", _renamed(_COSTS, _PAUSE))
      for name in ("group_hourly_costs", "group_cause_costs", "member_costs", "host_costs", "rebalance_episodes")),
    Migration("marts/group_daily_costs", _renamed(
        f"{_COSTS}, paused_partition_s_change pause_change_s",
        {**_PAUSE, "paused_partition_s_change": POINT_FIGURE_PAUSE})),
    Migration("marts/episode_handoffs", _renamed(
        "paused_s pause_s, paused_upper_s pause_upper_s", {"paused_s": POINT_FIGURE_PAUSE})),
    Migration("marts/config_comparison", _renamed(
        "predicted_paused_partition_s predicted_pause_s, duplicates_saved predicted_duplicates_saved, "
        "paused_partition_s_saved predicted_pause_saved_s, measured_paused_partition_s measured_pause_s")),
    Migration("marts/open_recommendations", _renamed(
        "duplicates_before predicted_duplicates_before, duplicates_after predicted_duplicates_after, "
        "duplicates_saved predicted_duplicates_saved, duplicates_saved_pct predicted_duplicates_saved_pct, "
        "paused_partition_s_before predicted_pause_before_s, paused_partition_s_after predicted_pause_after_s, "
        "paused_partition_s_saved predicted_pause_saved_s, paused_partition_s_saved_pct predicted_pause_saved_pct"),
        rewrites=(EVIDENCE_QUERY,)),  # rebuilt from gold/recommendations, whose queries the migration rewrote
    Migration("marts/recommendation_checks", _renamed(
        "predicted_paused_partition_s_saved predicted_pause_saved_s, "
        "measured_paused_partition_s_saved measured_pause_saved_s, duplicates_before measured_duplicates_before, "
        "duplicates_after measured_duplicates_after, paused_partition_s_before measured_pause_before_s, "
        "paused_partition_s_after measured_pause_after_s")),
)
TABLES = {t.path: t for t in (*catalog.TABLES, *catalog.CLOSED_LOOP_TABLES)}


def stored_columns(spark: SparkSession, location: str) -> list[str] | None:
    """The Delta table's columns at ``location``; None when there is no table (known without
    Spark for a local lake)."""
    from delta.tables import DeltaTable

    if "://" not in location and not (Path(location) / "_delta_log").is_dir():
        return None
    if not DeltaTable.isDeltaTable(spark, location):
        return None
    return spark.read.format("delta").load(location).columns


def migrated_rows(spark: SparkSession, lake_path: str, migration: Migration) -> DataFrame:
    """The table's rows under the new names: its declared columns in order (a renamed one from
    its older column, a rewritten one rewritten), then any stored column the declaration and
    the migration do not name."""
    table = TABLES[migration.path]
    rows = lake.read(spark, lake_path, table)
    stored = rows.columns
    by_new = {r.new: r for r in migration.renames}
    rewrites = {w.column: w for w in migration.rewrites}
    consumed = {r.old for r in migration.renames} | set(migration.dropped)
    declared = []
    for name, kind in table.all_columns():
        if name in stored and name in rewrites:
            declared.append(rewrites[name].of(F.col(f"`{name}`")).alias(name))
        elif name in stored:
            declared.append(F.col(f"`{name}`"))
        elif name in by_new and by_new[name].old in stored:
            declared.append(F.col(f"`{by_new[name].old}`").cast(kind).alias(name))
        else:  # a column added since: null, or what the rows before it say there (``_fill``)
            declared.append(_fill(migration.path, name, stored).cast(kind).alias(name))
    names = set(table.column_names())
    kept = [F.col(f"`{c}`") for c in stored if c not in consumed and c not in names]
    return rows.select(*declared, *kept)


CLUSTER = "cluster_id"
# The evidence queries stored before: the group is (cluster_id, group_id) in them too.
CLUSTER_EVIDENCE = Rewrite("evidence_query", (("WHERE group_id = :group_id",
                                               "WHERE cluster_id = :cluster_id AND group_id = :group_id"),))
WITH_CLUSTER = tuple(t for t in TABLES.values() if CLUSTER in t.column_names())


def cluster_said(path: str, verb: str = "") -> str:
    """The one line the cluster column's migration prints for a table (or, ``verb`` "rebuilt, ", a mart)."""
    return f"{path}: {verb}added {CLUSTER} ('{CLUSTER_UNKNOWN}' in the rows written before it: their agents sent none)"


def with_cluster(spark: SparkSession, lake_path: str) -> list[tuple[catalog.Table, DataFrame]]:
    """Each table of ``WITH_CLUSTER`` stored without its cluster column, and its rows with it
    (``CLUSTER_UNKNOWN``) placed as the declaration places it (stored evidence queries naming it)."""
    out = []
    for table in WITH_CLUSTER:
        columns = stored_columns(spark, table.location(lake_path))
        if columns is None or CLUSTER in columns:
            continue
        names = table.column_names()
        after = names[:names.index(CLUSTER)]  # the stored columns declared before it, then it, then the rest
        rows = lake.read(spark, lake_path, table)
        ordered = [*[c for c in columns if c in after], CLUSTER, *[c for c in columns if c not in after]]
        rows = rows.withColumn(CLUSTER, F.lit(CLUSTER_UNKNOWN))
        if CLUSTER_EVIDENCE.column in columns:
            rows = rows.withColumn(CLUSTER_EVIDENCE.column, CLUSTER_EVIDENCE.of(F.col(CLUSTER_EVIDENCE.column)))
        out.append((table, rows.select(*[F.col(f"`{c}`") for c in ordered])))
    return out


# What the broker source (issue 52) added to gold, and what a row written before it says there: every
# such row was the agent's, its cause read from telemetry. Its other new columns (the log's estimates
# and stop windows) are null in those rows.
SOURCE = "source"
SOURCE_FILLS: dict[str, dict[str, str]] = {catalog.HANDOFFS.path: {SOURCE: "agent", "cause_confidence": "exact"},
                                           catalog.EPISODES.path: {SOURCE: "agent"}}


# What the client's rebalance timings added to gold/episodes: before them, an episode's phases (where it had any:
# a slowest member) came from the agents' states.
PHASE_SOURCE = "phase_source"
PHASE_NOTE = (f"added the join steps and {PHASE_SOURCE} ('{AGENT_STATES}' where an episode had phases: the agents' "
              "states were their only source)")


def sources_note(path: str) -> str:
    """What the source columns' migration says of a table (its own line, or after a rename's)."""
    fills = ", ".join(f"{c} '{v}'" for c, v in SOURCE_FILLS[path].items())
    return f"added the broker source's columns ({fills} in the rows written before: the agent's)"


def _fill(path: str, name: str, stored: list[str]) -> Column:
    """What a column added since holds in the rows of ``path`` written before it (``stored`` their columns)."""
    if name in SOURCE_FILLS.get(path, {}):
        return F.lit(SOURCE_FILLS[path][name])
    if path == catalog.EPISODES.path and name == PHASE_SOURCE and "slowest_agent_id" in stored:
        return F.when(F.col("slowest_agent_id").isNotNull(), F.lit(AGENT_STATES))
    return F.lit(None)


def added_note(path: str, stored: list[str]) -> str:
    """What filling the table's columns added since says (``_fill``): each group of them it lacks, or ""."""
    notes = [sources_note(path)] if path in SOURCE_FILLS and SOURCE not in stored else []
    if path == catalog.EPISODES.path and PHASE_SOURCE not in stored:
        notes.append(PHASE_NOTE)
    return "; ".join(notes)


def with_added(spark: SparkSession, lake_path: str) -> list[tuple[catalog.Table, DataFrame, str]]:
    """Each of handoffs and episodes stored without a group of columns added since (``added_note``): its rows
    with the declared columns (the added ones as ``_fill`` says), and what that says."""
    out = []
    for table in (catalog.HANDOFFS, catalog.EPISODES):
        columns = stored_columns(spark, table.location(lake_path))
        note = "" if columns is None else added_note(table.path, columns)
        if not note:
            continue
        rows = lake.read(spark, lake_path, table)
        declared = [F.col(f"`{name}`") if name in columns
                    else _fill(table.path, name, columns).cast(kind).alias(name) for name, kind in table.all_columns()]
        kept = [F.col(f"`{c}`") for c in columns if c not in table.column_names()]
        out.append((table, rows.select(*declared, *kept), note))
    return out


# Tables whose declared columns are added in place where the stored table lacks them (metadata only, null in
# the rows before), because the SQL build reads them before any stage may write them again: the closed loop's
# (no stage rewrites them: ``--reruns``' count and standard errors), and the gold tables the broker source and
# the fleet view added columns to (a quiet run writes no group of them).
ADDED_IN_PLACE: tuple[catalog.Table, ...] = (*catalog.CLOSED_LOOP_TABLES, catalog.METRICS, catalog.COVERAGE,
                                             catalog.RECOMMENDATIONS)


def added_in_place(spark: SparkSession, lake_path: str) -> list[tuple[catalog.Table, list[tuple[str, str]]]]:
    """Each table of ``ADDED_IN_PLACE`` stored without columns its declaration added since, and those columns."""
    out = []
    for table in ADDED_IN_PLACE:
        columns = stored_columns(spark, table.location(lake_path))
        if columns is None:
            continue
        missing = [(n, k) for n, k in table.all_columns() if n not in columns]
        if missing:
            out.append((table, missing))
    return out


def migrate(spark: SparkSession, lake_path: str, progress: Progress = print) -> list[str]:
    """Rewrite each gold table still under older names with the new ones, each table without
    its cluster column with it, handoffs and episodes without columns added since with them; then
    add the new columns of the tables ``ADDED_IN_PLACE`` lists (null in the rows before, metadata
    only; a table renamed above has them already). The caller holds the lake's lock; the lines
    printed, one per table migrated."""
    said = []
    for table, rows in with_cluster(spark, lake_path):
        lake.rewrite(spark, lake_path, table, rows)
        said.append(cluster_said(table.path))
        progress(said[-1])
    for migration in GOLD:
        table = TABLES[migration.path]
        columns = stored_columns(spark, table.location(lake_path))
        if columns is None or not migration.applies_to(columns):
            continue
        lake.rewrite(spark, lake_path, table, migrated_rows(spark, lake_path, migration))
        note = added_note(migration.path, columns)  # filled in the same rewrite
        said.append(migration.said() + (f"; {note}" if note else ""))
        progress(said[-1])
    for table, rows, note in with_added(spark, lake_path):
        lake.rewrite(spark, lake_path, table, rows)
        said.append(f"{table.path}: {note}")
        progress(said[-1])
    for table, missing in added_in_place(spark, lake_path):
        location = table.location(lake_path).replace("`", "``")  # a backtick in the path, quoted
        spark.sql(f"ALTER TABLE delta.`{location}` ADD COLUMNS "
                  f"({', '.join(f'`{n}` {k}' for n, k in missing)})")
        said.append(f"{table.path}: added {', '.join(n for n, _ in missing)} (null in the rows written before)")
        progress(said[-1])
    return said


# The marts keyed by group: one stored without cluster_id is rebuilt whole (its key changed).
MARTS_WITH_CLUSTER = ("agent_telemetry_quality", "commit_on_revoke_daily", "config_comparison", "episode_handoffs",
                      "group_cause_costs", "group_daily_costs", "group_hourly_costs", "host_costs", "member_costs",
                      "open_recommendations", "rebalance_episodes", "recommendation_checks")


# The marts that carry the handoffs' estimates and their source (agent, broker, both): one stored before
# them is rebuilt whole (appended columns would read null in its older rows). The column whose absence says
# so, and what the mart's line says of it.
ESTIMATE_MARTS = ("episode_handoffs", "rebalance_episodes")
ADDED_TO_MARTS: tuple[tuple[str, str], ...] = (
    (catalog.ESTIMATES[0], f"added the estimates ({catalog.ESTIMATES[0]} and the rest)"),
    (SOURCE, "added where its figures came from (source)"),
)


def stale_marts(spark: SparkSession, lake_path: str, progress: Progress = print) -> list[str]:
    """The marts still under older names or without the estimates, which the next SQL build rebuilds
    whole; prints one line per mart."""
    stale = []
    for name in MARTS_WITH_CLUSTER:
        columns = stored_columns(spark, f"{lake_path.rstrip('/')}/marts/{name}")
        if columns is not None and CLUSTER not in columns:
            stale.append(name)
            progress(cluster_said(f"marts/{name}", "rebuilt, "))
    for migration in MARTS:
        columns = stored_columns(spark, f"{lake_path.rstrip('/')}/{migration.path}")
        if columns is not None and migration.applies_to(columns):
            if migration.path.split("/", 1)[1] not in stale:
                stale.append(migration.path.split("/", 1)[1])
            progress(migration.said("rebuilt, "))
    for name in ESTIMATE_MARTS:
        columns = stored_columns(spark, f"{lake_path.rstrip('/')}/marts/{name}")
        added = [said for column, said in ADDED_TO_MARTS if columns is not None and column not in columns]
        if added:
            if name not in stale:
                stale.append(name)
            progress(f"marts/{name}: rebuilt, {'; '.join(added)}")
    return stale
