"""Validation: each new bronze batch checked by a Great Expectations suite, bad rows quarantined.

The rules are GE expectations over columns derived from the contract (parse errors,
missing fields, offsets, times). GE's row-level result (``unexpected_index_list``, by
bronze coordinates) decides which rows go to quarantine and why, so each rule exists
once. Sequence gaps (lost telemetry) are a warning: the row itself is fine, the gap
is counted in the summary.

Per batch, counts add up: ``rows = quarantined + valid`` and ``valid = duplicates +
new_events``. Valid rows are MERGEd into silver ``events`` keyed by event_id, so a
duplicate never lands twice, and a replayed batch (after a crash) changes nothing.
A batch whose quarantined share exceeds ``max_bad_row_fraction`` writes its
quarantine rows and a failed summary, adds no events, and fails the run.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines import lake, telemetry_schema as ts
from pipelines.config import PipelineConfig
from pipelines.errors import LensError

ROW_ID = "bronze_row"
BRONZE_KEYS = ["topic", "kafka_partition", "kafka_offset"]  # a record's place in the topic


@dataclass(frozen=True)
class Rule:
    name: str
    expectation: Any
    quarantine: bool = True


def may_fail(expectation: Any) -> Column:
    """Rows the expectation could flag, derived from its own kwargs (GE ignores nulls
    except in the null checks). A superset is harmless: GE still decides every row it is
    given; a row outside this set passes the expectation by construction. An expectation
    type not known here keeps every row, so adding a rule can never hide a failure."""
    name, column = type(expectation).__name__, F.col(expectation.column)
    if name == "ExpectColumnValuesToBeNull":
        return column.isNotNull()
    if name == "ExpectColumnValuesToNotBeNull":
        return column.isNull()
    if name == "ExpectColumnValuesToBeInSet":
        return column.isNotNull() & ~column.isin(list(expectation.value_set))
    if name == "ExpectColumnValuesToBeBetween" and not (expectation.strict_min or expectation.strict_max):
        outside = F.lit(False)
        if expectation.min_value is not None:
            outside = outside | (column < F.lit(expectation.min_value))
        if expectation.max_value is not None:
            outside = outside | (column > F.lit(expectation.max_value))
        return column.isNotNull() & outside
    return F.lit(True)


def _offset_arrays(node: dict[str, Any], path: str, in_array: bool = False) -> list[str]:
    """SQL arrays holding every offset field of a body definition (found by the contract's $ref).

    Field access through an array of structs (``p.partitions.position``) yields the
    array of that field without a lambda: lambdas (``transform``) are interpreted row by
    row and made this check cost as much as parsing the JSON.
    """
    out = []
    for name, sub in node.get("properties", {}).items():
        field = f"{path}.`{name}`"
        if sub.get("$ref", "").endswith("/offset") or name == "offset":
            out.append(field if in_array else f"array({field})")
        elif sub.get("type") == "array":
            items = sub["items"]
            items = ts.contract()["$defs"][items["$ref"].rsplit("/", 1)[-1]] if "$ref" in items else items
            out += [f"flatten({e})" if in_array else e for e in _offset_arrays(items, field, in_array=True)]
    return out


def _min_offset() -> Column:
    """The smallest offset in the body, -1001 (unknown) excepted."""
    branches = F.lit(None).cast("bigint")
    for definition in sorted(set(ts.body_definitions().values())):
        parts = _offset_arrays(ts.contract()["$defs"][definition], f"`{definition}`")
        if parts:
            expr = F.expr(f"array_min(array_except(concat({', '.join(parts)}), array(-1001L)))")
            branches = F.when(F.col(f"`{definition}`").isNotNull(), expr).otherwise(branches)
    return branches


def _body_missing() -> Column:
    """Names of the kind's required body fields that are absent, or null when complete."""
    out = F.lit(None).cast("string")
    for kind, definition in ts.body_definitions().items():
        required = ts.required_body_fields(definition)
        missing = F.concat_ws(",", *[F.when(F.col(f"`{definition}`.`{f}`").isNull(), F.lit(f)) for f in required])
        out = F.when(F.col("kind") == kind, F.when(F.col(f"`{definition}`").isNull(), F.lit("body"))
                     .otherwise(F.nullif(missing, F.lit("")))).otherwise(out)
    return out


def parse(bronze: DataFrame) -> DataFrame:
    """Bronze rows with the envelope, a typed struct per body definition, and the derived checks."""
    text = F.col("value").cast("string")
    env = F.from_json(text, ts.envelope_schema(), {"columnNameOfCorruptRecord": ts.CORRUPT_COLUMN,
                                                   "mode": "PERMISSIVE"})
    df = bronze.withColumn(ROW_ID, F.concat_ws(":", "topic", "kafka_partition", "kafka_offset")) \
        .withColumn("_env", env).select("*", "_env.*").drop("_env")
    df = df.withColumn(ts.CORRUPT_COLUMN, F.when(text.isNull(), F.lit("<null value>"))
                       .otherwise(F.col(ts.CORRUPT_COLUMN)))
    for definition in sorted(set(ts.body_definitions().values())):
        kinds = [k for k, d in ts.body_definitions().items() if d == definition]
        df = df.withColumn(definition, F.when(F.col("kind").isin(kinds),
                                              F.from_json("body", ts.body_schema(definition))))
    ts_ms = (F.unix_micros(F.col("kafka_timestamp")) / 1000).cast("bigint")
    return (df.withColumn("event_lag_ms", ts_ms - F.col("event_time_ms"))
            .withColumn("min_offset", _min_offset())
            .withColumn("body_missing", _body_missing()))


def rules(config: PipelineConfig) -> list[Rule]:
    """The suite: every rule a row must pass, plus the sequence-gap warning."""
    import great_expectations as gx

    E = gx.expectations
    out = [Rule("malformed_json", E.ExpectColumnValuesToBeNull(column=ts.CORRUPT_COLUMN)),
           Rule("unknown_schema_version", E.ExpectColumnValuesToBeInSet(column="schema_version",
                                                                        value_set=[ts.schema_version()]))]
    out += [Rule(f"missing_{f}", E.ExpectColumnValuesToNotBeNull(column=f)) for f in ts.required_envelope_fields()]
    out += [
        Rule("unknown_kind", E.ExpectColumnValuesToBeInSet(column="kind", value_set=ts.kinds())),
        Rule("incomplete_body", E.ExpectColumnValuesToBeNull(column="body_missing")),
        Rule("implausible_time", E.ExpectColumnValuesToBeBetween(column="event_time_ms",
                                                                 min_value=config.min_event_time_ms)),
        Rule("time_far_from_kafka", E.ExpectColumnValuesToBeBetween(
            column="event_lag_ms", min_value=-config.max_clock_skew_s * 1000, max_value=config.max_event_delay_s * 1000)),
        Rule("negative_offset", E.ExpectColumnValuesToBeBetween(column="min_offset", min_value=0)),
        Rule("sequence_gap", E.ExpectColumnValuesToBeBetween(column="seq_gap", min_value=0, max_value=0),
             quarantine=False),
    ]
    return out


def known_sequence(spark: SparkSession, events_path: str, batch: DataFrame, groups: list[str]) -> DataFrame:
    """The sequence numbers silver already holds for the batch's agents.

    Read through the batch's ``groups`` (an agent belongs to one group). Silver rows that
    came from this very batch are left out, so a replayed batch (after a crash) gets the
    same gaps as the first attempt.
    """
    agents = batch.select("agent_id").distinct()
    return (lake.rows_of(spark, events_path, "group_id", groups)
            .join(F.broadcast(agents), "agent_id")
            .join(batch.select(*BRONZE_KEYS), BRONZE_KEYS, "left_anti")
            .select("agent_id", "seq"))


def with_seq_gaps(batch: DataFrame, known: DataFrame | None) -> DataFrame:
    """Per row, how many of the agent's sequence numbers are missing just before it.

    The previous number is the highest one below it among the batch and the agent's
    events already in silver (``known``), so a resent (duplicate) event neither opens
    nor hides a gap. Rows without an agent or a sequence number get no gap (another
    rule flags them).
    """
    timeline = batch if known is None else batch.unionByName(known, allowMissingColumns=True)
    # Rows without a sequence number sit in their own partition: they precede nobody.
    w = Window.partitionBy("agent_id", F.col("seq").isNull()).orderBy("seq", F.col(ROW_ID).asc_nulls_first())
    prev = F.lag("seq").over(w)
    gap = (F.when(F.col("agent_id").isNull() | F.col("seq").isNull(), F.lit(None))
           .when(prev.isNull(), F.col("seq")).when(prev == F.col("seq"), F.lit(0))
           .otherwise(F.col("seq") - prev - 1))
    return timeline.withColumn("seq_gap", gap).where(F.col(ROW_ID).isNotNull())


NULL_CHECKS = {"ExpectColumnValuesToBeNull", "ExpectColumnValuesToNotBeNull"}


class Validator:
    """One GE context and suite for a run; ``check`` validates one batch."""

    def __init__(self, config: PipelineConfig) -> None:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
        import great_expectations as gx

        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        self.rules = rules(config)
        self.columns = sorted({r.expectation.column for r in self.rules})
        self.null_only = {c for c in self.columns if all(type(r.expectation).__name__ in NULL_CHECKS
                                                         for r in self.rules if r.expectation.column == c)}
        self.suspect = reduce(lambda a, b: a | b, [may_fail(r.expectation) for r in self.rules])
        self.context = gx.get_context(mode="ephemeral")
        try:
            from great_expectations.data_context.types.base import ProgressBarsConfig

            self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        except (ImportError, AttributeError):
            pass
        source = self.context.data_sources.add_pandas(name="bronze")
        batch = source.add_dataframe_asset(name="telemetry_batch").add_batch_definition_whole_dataframe("batch")
        suite = self.context.suites.add(gx.ExpectationSuite(
            name="telemetry_v1", expectations=[r.expectation for r in self.rules]))
        self.definition = self.context.validation_definitions.add(
            gx.ValidationDefinition(name="telemetry_v1_batch", data=batch, suite=suite))

    def inputs(self, parsed: DataFrame, keep: Sequence[str]) -> list[Column]:
        """The columns the rules read, except the sequence gap (computed over the batch later).

        A column only checked for null is replaced by a marker that is null exactly when
        it is (the raw body, the corrupt text), unless ``keep`` asks for its value: the
        rules see the same thing and the cached batch stays narrow.
        """
        out = []
        for c in self.columns:
            if c == "seq_gap" or c in keep:
                continue
            out.append(F.when(F.col(c).isNotNull(), F.lit(True)).alias(c) if c in self.null_only else F.col(c))
        return [*[F.col(k) for k in keep], *out]

    def _run(self, df: Any, result_format: dict[str, Any]) -> list[tuple[Rule, dict[str, Any]]]:
        result = self.definition.run(batch_parameters={"dataframe": df}, result_format=result_format)
        by_id = {r.expectation.id: r for r in self.rules}
        out = []
        for res in result.results:
            rule = by_id[res.expectation_config.id]
            if res.exception_info and res.exception_info.get("raised_exception"):
                raise LensError(f"validation rule {rule.name} could not run: "
                                f"{res.exception_info.get('exception_message')}")
            out.append((rule, res.result))
        return out

    def check(self, df: DataFrame) -> tuple[dict[str, list[str]], dict[str, int]]:
        """(bronze row -> reasons for quarantine, rule -> failing rows) for one prepared batch.

        GE on Spark runs one job per metric (about ten seconds a batch, whatever its
        size), so one Spark pass selects the rows some rule could flag (usually none)
        and GE validates those, in pandas, in this process: the failure counts and row
        ids are the same as over the whole batch. A first GE pass counts failures per
        rule; only when a quarantine rule failed does a second pass ask for the rows' ids.
        """
        import pandas as pd

        suspects = df.where(self.suspect)
        return self._check(pd.DataFrame.from_records([r.asDict() for r in suspects.collect()],
                                                     columns=suspects.columns))

    def _check(self, df: Any) -> tuple[dict[str, list[str]], dict[str, int]]:
        counts = self._run(df, {"result_format": "SUMMARY"})
        failures = {rule.name: int(res.get("unexpected_count") or 0) for rule, res in counts}
        reasons: dict[str, list[str]] = {}
        if not any(failures[r.name] for r in self.rules if r.quarantine):
            return reasons, failures
        for rule, res in self._run(df, {"result_format": "COMPLETE", "unexpected_index_column_names": [ROW_ID]}):
            if rule.quarantine:
                for row in res.get("unexpected_index_list") or []:
                    reasons.setdefault(row[ROW_ID], []).append(rule.name)
        return reasons, failures


ENVELOPE = [f for f in ts.contract()["properties"]]
BRONZE_COLUMNS = ["topic", "kafka_partition", "kafka_offset", "kafka_timestamp", "key", "value", "date"]
# What the later stages prune events by: a group's events (silver, gold), a batch's (changed groups), an agent's (gaps).
EVENT_STATS = ["group_id", "validate_batch", "agent_id", "event_time_ms"]


def _event_rows(valid: DataFrame, batch_id: int) -> DataFrame:
    """Typed silver event rows: the envelope, raw body, a struct per body definition, provenance."""
    definitions = sorted(set(ts.body_definitions().values()))
    return valid.select(*ENVELOPE, *definitions, "topic", "kafka_partition", "kafka_offset", "kafka_timestamp",
                        F.to_date(F.timestamp_millis("event_time_ms")).alias("event_date"),
                        F.lit(batch_id).cast("bigint").alias("validate_batch"))


def _earliest_per_event(rows: DataFrame) -> DataFrame:
    """Each event id's first record by bronze position (a resent event keeps its first copy)."""
    first = Window.partitionBy("event_id").orderBy(*BRONZE_KEYS)
    return rows.withColumn("_rank", F.row_number().over(first)).where("_rank = 1").drop("_rank")


def validate_batch(spark: SparkSession, config: PipelineConfig, validator: Validator,
                   batch: DataFrame, batch_id: int) -> dict[str, Any]:
    """Validate one bronze batch, write quarantine, events and the summary; the summary row."""
    events_path = lake.table_path(config.lake_path, lake.EVENTS)
    # The checks and the keys, narrow enough to cache; the wide typed rows are parsed again
    # for the writes (caching them costs more than parsing twice).
    parsed = parse(batch)
    keys = [ROW_ID, *BRONZE_KEYS]
    base = parsed.select(*validator.inputs(parsed, keep=[*keys, "event_id", "agent_id", "seq", "group_id"]))
    groups, known = None, None
    if lake.exists(spark, events_path):
        base = base.persist()  # read twice: for its groups and agents, then for the checks
        groups = [r[0] for r in base.select("group_id").distinct().collect()]
        known = known_sequence(spark, events_path, base, groups)
    checks = with_seq_gaps(base, known).persist()
    try:
        # One pass for the batch's figures: rows, events missing by sequence, distinct ids.
        stats = checks.agg(F.count("*").alias("rows"),
                           F.sum(F.greatest(F.col("seq_gap"), F.lit(0))).alias("missing"),
                           F.count_distinct("event_id").alias("ids")).first()
        base.unpersist()
        rows, missing = stats["rows"], stats["missing"] or 0
        reasons, failures = validator.check(checks.select(ROW_ID, *validator.columns))
        bad = spark.createDataFrame(sorted(reasons.items()), f"{ROW_ID} string, reasons array<string>")
        quarantine_path = lake.table_path(config.lake_path, lake.QUARANTINE)
        if reasons or not lake.exists(spark, quarantine_path):
            quarantined = parsed.join(F.broadcast(bad), ROW_ID).select(
                *BRONZE_COLUMNS, "reasons", F.lit(batch_id).cast("bigint").alias("validate_batch"))
            if not reasons:  # create the table empty, without parsing the batch again to join it with nothing
                quarantined = spark.createDataFrame([], quarantined.schema)
            lake.insert_new(spark, quarantine_path, quarantined, keys=BRONZE_KEYS, sort_by=BRONZE_KEYS,
                            stats_columns=[*BRONZE_KEYS, "validate_batch"], partition_by=["date"])
        valid, valid_keys, n_first = parsed, checks, stats["ids"]
        if reasons:
            valid = parsed.join(F.broadcast(bad), ROW_ID, "left_anti")
            valid_keys = checks.join(F.broadcast(bad), ROW_ID, "left_anti")
            n_first = valid_keys.select(F.count_distinct("event_id")).first()[0]
        n_valid = rows - len(reasons)
        firsts, first_keys = valid, valid_keys
        if n_first < n_valid:  # the batch repeats event ids: keep each id's earliest record
            firsts, first_keys = _earliest_per_event(valid), _earliest_per_event(valid_keys)
        seen_elsewhere = 0
        if groups is not None:  # a resent event has its first copy's group
            existing = lake.rows_of(spark, events_path, "group_id", groups).select(
                "event_id", F.col("topic").alias("e_topic"), F.col("kafka_partition").alias("e_partition"),
                F.col("kafka_offset").alias("e_offset"))
            seen_elsewhere = (first_keys.select("event_id", "topic", "kafka_partition", "kafka_offset")
                              .join(existing, "event_id")
                              .where("NOT (topic = e_topic AND kafka_partition = e_partition "
                                     "AND kafka_offset = e_offset)").count())
        passed = len(reasons) <= config.max_bad_row_fraction * rows
        if passed:
            lake.insert_new(spark, events_path, _event_rows(firsts, batch_id), keys=["event_id"],
                            sort_by=["group_id", "event_time_ms"], stats_columns=EVENT_STATS,
                            partition_by=["event_date"],
                            scope=("group_id", groups))  # a resent event id carries its first copy's group
        summary = {"validate_batch": batch_id, "rows": rows, "quarantined": len(reasons), "valid": n_valid,
                   "duplicates": n_valid - n_first + seen_elsewhere, "new_events": n_first - seen_elsewhere,
                   "sequence_gaps": failures.get("sequence_gap", 0), "missing_events": int(missing),
                   "rule_failures": failures, "passed": passed, "max_bad_row_fraction": config.max_bad_row_fraction}
        summary_df = spark.createDataFrame([summary], SUMMARY_DDL).withColumn("validated_at", F.current_timestamp())
        _upsert_summary(spark, config, summary_df)
        return summary
    finally:
        checks.unpersist()


SUMMARY_DDL = ("validate_batch bigint, rows bigint, quarantined bigint, valid bigint, duplicates bigint, "
               "new_events bigint, sequence_gaps bigint, missing_events bigint, rule_failures map<string,bigint>, "
               "passed boolean, max_bad_row_fraction double")


def _upsert_summary(spark: SparkSession, config: PipelineConfig, summary: DataFrame) -> None:
    from delta.tables import DeltaTable

    path = lake.table_path(config.lake_path, lake.VALIDATION_SUMMARY)
    if not lake.exists(spark, path):
        summary.write.format("delta").save(path)
        return
    (DeltaTable.forPath(spark, path).alias("t").merge(summary.alias("s"), "t.validate_batch = s.validate_batch")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())


def run_validate(spark: SparkSession, config: PipelineConfig, progress=print) -> dict[str, int]:
    """Validate every bronze row not validated yet (streaming over bronze, available-now)."""
    bronze = lake.table_path(config.lake_path, lake.BRONZE)
    if not lake.exists(spark, bronze):
        raise LensError(f"no bronze table at {bronze}: run `rebalance-lens pipeline run ingest` first")
    validator = Validator(config)
    totals: dict[str, int] = {"batches": 0, "rows": 0, "quarantined": 0, "duplicates": 0, "new_events": 0}
    failed: list[str] = []

    def each_batch(batch: DataFrame, batch_id: int) -> None:
        summary = validate_batch(spark, config, validator, batch, batch_id)
        totals["batches"] += 1
        for key in ("rows", "quarantined", "duplicates", "new_events"):
            totals[key] += summary[key]
        progress(f"validate batch {batch_id}: {summary['rows']} rows, {summary['quarantined']} quarantined, "
                 f"{summary['duplicates']} duplicates, {summary['new_events']} new events, "
                 f"{summary['missing_events']} missing by sequence")
        if not summary["passed"]:
            failed.append(f"validation batch {batch_id} has {summary['quarantined']} bad rows of {summary['rows']} "
                          f"(more than max_bad_row_fraction={config.max_bad_row_fraction}); they are in "
                          f"{lake.table_path(config.lake_path, lake.QUARANTINE)} with their reasons. Fix the "
                          "producer, or raise max_bad_row_fraction (--max-bad-fraction) and rerun")
            raise LensError(failed[-1])

    query = (spark.readStream.format("delta").load(bronze).writeStream
             .foreachBatch(each_batch)
             .option("checkpointLocation", f"{config.checkpoint_path}/validate")
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    except Exception as err:
        if failed:
            raise LensError(failed[-1]) from None
        raise err
    return totals
