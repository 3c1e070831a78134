"""The gold stage: ownership intervals, handoffs, episodes and metrics for the groups with new
validated events (incremental by group, see ``pipelines.scope``)."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import catalog, lake
from pipelines.config import PipelineConfig, Progress
from pipelines.gold.group_apply import apply_per_group
from pipelines.gold.group_pass import gold_of_group
from pipelines.gold.metrics import group_metrics
from pipelines.gold.ownership import PARTITION_FACTS
from pipelines.scope import events_of, pending

ENVELOPE_FOR_LOGIC = ["event_id", "kind", "event_time_ms", "agent_id", "seq", "group_id", "member_id",
                      "group_instance_id", "client_id", "host", "generation", "group_protocol",
                      "assignor", "body"]  # what gold_of_group reads
MEMBER_DETAILS = ["event_id", "member_id", "group_instance_id", "client_id", "host", "generation", "group_protocol",
                  "assignor"]
# The pass's three outputs, each with its table. One row per interval, handoff or episode
# (the other two null), split in Spark: rows of bounded size, where one row per group with
# three arrays grows with the group's history.
OUTPUTS = (("interval", catalog.OWNERSHIP), ("handoff", catalog.HANDOFFS), ("episode", catalog.EPISODES),
           ("member", catalog.MEMBERS))
GROUP_ROW_DDL = ", ".join(f"{name} struct<{table.ddl(': ')}>" for name, table in OUTPUTS)


def for_logic(events: DataFrame) -> DataFrame:
    """The columns ``gold_of_group`` reads; the member details of partition facts (which
    it does not read) as nulls: a narrower shuffle into the pass (2.5M events: 26.8 ->
    24.3 s)."""
    fact = F.col("kind").isin(list(PARTITION_FACTS))
    return events.select(*[F.when(~fact, F.col(c)).alias(c) if c in MEMBER_DETAILS else F.col(c)
                           for c in ENVELOPE_FOR_LOGIC])


def spill_path(config: PipelineConfig) -> str:
    """Where the pass's rows are spilled while the stage runs (deleted after it)."""
    return f"{config.checkpoint_path}/gold_rows"


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """Ownership intervals, handoffs, episodes, members and metrics for the groups with events
    validated since gold last ran. Gold reads the validated events, as silver does, not
    silver's output: one per-group pass needs the whole timeline."""
    todo = pending(spark, config, "gold", progress)
    if todo is None:
        return {"groups": 0}
    high, groups = todo
    gap = config.episode_gap_s
    events = events_of(spark, config, groups, high)  # not cached: the pass and the metrics need different columns

    def gold(group: list[dict]) -> list[dict]:
        outputs = dict(zip((name for name, _ in OUTPUTS), gold_of_group(group, gap)))
        empty = dict.fromkeys(outputs)
        return [{**empty, name: row} for name, rows in outputs.items() for row in rows]

    # Spilled (written once, read back) so the Python pass runs once for all outputs.
    with lake.spilled(spark, apply_per_group(for_logic(events), "group_id", gold, GROUP_ROW_DDL),
                      spill_path(config)) as rows:
        of = {name: rows.where(F.col(name).isNotNull()).select(f"{name}.*") for name, _ in OUTPUTS}
        for name, table in OUTPUTS:
            lake.replace_scope(spark, config.lake_path, table, of[name], groups)
        counts = rows.agg(*[F.count(name).alias(f"{name}s") for name, _ in OUTPUTS]).first().asDict()
        lake.replace_scope(spark, config.lake_path, catalog.METRICS,
                           group_metrics(of["handoff"], of["episode"], events), groups)
    lake.set_stage_mark(spark, config.lake_path, "gold", high)
    return {"groups": len(groups), **counts}
