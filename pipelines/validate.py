"""Validation: each new bronze batch checked by Great Expectations suites, bad rows quarantined.

The rules are GE expectations over columns derived from the contract (parse errors,
missing fields, offsets, times). GE's row-level result (``unexpected_index_list``, by
bronze keys) decides which rows go to quarantine and why, so each rule exists once.
Sequence gaps (lost telemetry) are a warning: the row itself is fine, the gap is
counted in the summary (found against the runs of sequence numbers kept per agent,
``pipelines.sequences``). Repeated event ids are looked for in earlier batches' events of
the batch's groups and event dates only: neither check rereads a group's history.

The JSON is parsed once per batch: every row lands in silver ``events`` as it is parsed
(an unparsable one too, with its text in ``_corrupt_record``), the checks run on what
landed, and the rows GE failed or that repeat an event id are deleted after (see
``validate_batch``). Per batch, counts add up: ``rows =
quarantined + valid`` and ``valid = duplicates + new_events``; a duplicate never stays
twice, and a replayed batch (after a crash) ends as its first attempt would have. A
batch whose quarantined share exceeds ``max_bad_row_fraction`` writes its quarantine
rows and a failed summary, keeps no events, and fails the run.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from consumer_agent import contract
from lens_runtime.errors import LensError
from pipelines import catalog, lake, sequences, telemetry_types as ts
from pipelines.catalog import BRONZE_KEYS
from pipelines.config import PipelineConfig, Progress


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
            items = contract.schema()["$defs"][items["$ref"].rsplit("/", 1)[-1]] if "$ref" in items else items
            out += [f"flatten({e})" if in_array else e for e in _offset_arrays(items, field, in_array=True)]
    return out


def _min_offset() -> Column:
    """The smallest offset in the body, unknown (OFFSET_UNKNOWN) excepted. (``array_remove``
    scans the array; ``array_except`` built a hash set per row and cost five times as much.)"""
    branches = F.lit(None).cast("bigint")
    for definition in ts.definitions():
        parts = _offset_arrays(contract.schema()["$defs"][definition], f"`{definition}`")
        if parts:
            expr = F.expr(f"array_min(array_remove(concat({', '.join(parts)}), {contract.OFFSET_UNKNOWN}L))")
            branches = F.when(F.col(f"`{definition}`").isNotNull(), expr).otherwise(branches)
    return branches


def _body_missing() -> Column:
    """Names of the kind's required body fields that are absent ("body" when the body
    did not parse), or null when complete. Per row only a test for nulls runs: the
    names are built only for an incomplete body."""
    out = F.when(F.col("kind").isin(list(contract.BODY_DEFINITIONS)), F.lit("body"))
    for definition in ts.definitions():
        fields = [F.col(f"`{definition}`.`{f}`") for f in ts.required_body_fields(definition)]
        names = F.concat_ws(",", *[F.when(c.isNull(), F.lit(f))
                                   for c, f in zip(fields, ts.required_body_fields(definition))])
        incomplete = reduce(lambda a, b: a | b, [c.isNull() for c in fields], F.lit(False))
        out = F.when(F.col(f"`{definition}`").isNotNull(), F.when(incomplete, names)).otherwise(out)
    return out


def parse(bronze: DataFrame) -> DataFrame:
    """Bronze rows with the envelope and a typed struct per body definition (what silver
    ``events`` holds), the corrupt-record column of from_json, and a later schema version's
    whole text.

    A value that is not UTF-8 counts as unparsable (its text goes to the corrupt column, so
    malformed_json rejects it): JSON exchanged between systems must be UTF-8 (RFC 8259, 8.1),
    and Spark's parser would otherwise read the bad bytes as U+FFFD and accept a group named
    with them. (``is_valid_utf8`` scans the bytes once; the parse reads them anyway.)

    Forward compatibility: an event of a later ``schema_version`` is read by this version's
    fields (later versions only add fields; see the contract) and keeps its whole JSON text in
    ``later_version_json``, so the fields this pipeline does not know are not lost; its body's
    text is in ``body`` as for every event."""
    text = F.col("value").cast("string")
    env = F.from_json(text, ts.envelope_schema(), {"columnNameOfCorruptRecord": ts.CORRUPT_COLUMN,
                                                   "mode": "PERMISSIVE"})
    df = bronze.withColumn("_env", env).select("*", "_env.*").drop("_env")
    utf8 = F.is_valid_utf8(text)
    # what events keep of the text: valid UTF-8 (bad bytes as U+FFFD), else a reader without a
    # JVM (polars, delta-rs) fails on the whole file, the deleted rows' bytes included;
    # the quarantine keeps the record's bytes as they came
    kept = F.when(utf8, text).otherwise(F.make_valid_utf8(text))
    df = df.withColumn(ts.CORRUPT_COLUMN, F.when(text.isNull(), F.lit("<null value>"))
                       .when(~utf8, kept)
                       .otherwise(F.col(ts.CORRUPT_COLUMN)))
    df = df.withColumn(ts.LATER_VERSION_COLUMN, F.when(F.col("schema_version") > contract.SCHEMA_VERSION, kept))
    for definition in ts.definitions():
        kinds = [k for k, d in contract.BODY_DEFINITIONS.items() if d == definition]
        df = df.withColumn(definition, F.when(F.col("kind").isin(kinds),
                                              F.from_json("body", ts.body_schema(definition))))
    return df


def with_checks(typed: DataFrame) -> DataFrame:
    """Typed rows (parsed, or read back from ``events``) with the columns the rules check
    that the contract does not hold as such: lag behind Kafka, smallest offset, missing
    body fields."""
    ts_ms = (F.unix_micros(F.col("kafka_timestamp")) / 1000).cast("bigint")
    return (typed.withColumn("event_lag_ms", ts_ms - F.col("event_time_ms"))
            .withColumn("min_offset", _min_offset())
            .withColumn("body_missing", _body_missing()))


def rules(config: PipelineConfig) -> list[Rule]:
    """The suite: every rule a row must pass, plus the sequence-gap warning."""
    import great_expectations as gx

    E = gx.expectations
    # Versions before this one do not exist; later ones are read by this version's fields
    # (forward compatible, see ``parse``).
    out = [Rule("malformed_json", E.ExpectColumnValuesToBeNull(column=ts.CORRUPT_COLUMN)),
           Rule("unknown_schema_version", E.ExpectColumnValuesToBeBetween(column="schema_version",
                                                                          min_value=contract.SCHEMA_VERSION))]
    out += [Rule(f"missing_{f}", E.ExpectColumnValuesToNotBeNull(column=f)) for f in ts.required_envelope_fields()]
    # Each envelope field the contract limits to a list of values (kind, group_protocol,
    # rebalance_protocol): the later stages branch on them.
    out += [Rule(f"unknown_{f}", E.ExpectColumnValuesToBeInSet(column=f, value_set=values))
            for f, values in ts.envelope_enums().items()]
    out += [
        Rule("incomplete_body", E.ExpectColumnValuesToBeNull(column="body_missing")),
        Rule("implausible_time", E.ExpectColumnValuesToBeBetween(column="event_time_ms",
                                                                 min_value=config.min_event_time_ms)),
        Rule("time_far_from_kafka", E.ExpectColumnValuesToBeBetween(
            column="event_lag_ms", min_value=-config.max_clock_skew_s * 1000,
            max_value=config.max_event_delay_s * 1000)),
        Rule("negative_offset", E.ExpectColumnValuesToBeBetween(column="min_offset", min_value=0)),
        Rule("sequence_gap", E.ExpectColumnValuesToBeBetween(column="seq_gap", min_value=0, max_value=0),
             quarantine=False),
        Rule("agent_in_another_group", E.ExpectColumnValuesToBeNull(column="agent_group")),
    ]
    return out


NULL_CHECKS = {"ExpectColumnValuesToBeNull", "ExpectColumnValuesToNotBeNull"}
# computed across the rows of an agent, not from one row (pipelines.sequences)
TIMELINE_COLUMNS = {"seq_gap", "agent_group"}


class Validator:
    """One GE context per process (``_suites``), with two suites: the row rules, checked on each row,
    and the timeline rules (sequence gaps, an agent's group), checked on the rows of a gap or
    of an agent naming two groups. ``check``
    validates one batch."""

    def __init__(self, config: PipelineConfig) -> None:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        self.rules, self.definitions = _suites(config)
        row_rules = _row_rules(self.rules)
        self.columns = sorted({r.expectation.column for r in row_rules})
        self.null_only = {c for c in self.columns if all(type(r.expectation).__name__ in NULL_CHECKS
                                                         for r in row_rules if r.expectation.column == c)}
        self.suspected_by = F.nullif(F.concat_ws(",", *[F.when(may_fail(r.expectation), F.lit(r.name))
                                                      for r in row_rules]), F.lit(""))
        self.suspect = reduce(lambda a, b: a | b, [may_fail(r.expectation) for r in row_rules])

    def inputs(self, typed: DataFrame) -> list[Column]:
        """The bronze keys and the columns the row rules read.

        A column only checked for null is replaced by a marker that is null exactly when
        it is (the raw body, the corrupt text): the rules see the same thing and the rows
        sent to GE stay narrow.
        """
        return [*[F.col(k) for k in BRONZE_KEYS],
                *[F.when(F.col(c).isNotNull(), F.lit(True)).alias(c) if c in self.null_only else F.col(c)
                  for c in self.columns]]

    def _run(self, definition: Any, df: Any, result_format: dict[str, Any]) -> list[tuple[Rule, dict[str, Any]]]:
        result = definition.run(batch_parameters={"dataframe": df}, result_format=result_format)
        by_id = {r.expectation.id: r for r in self.rules}
        out = []
        for res in result.results:
            rule = by_id[res.expectation_config.id]
            if res.exception_info and res.exception_info.get("raised_exception"):
                raise LensError(f"validation rule {rule.name} could not run: "
                                f"{res.exception_info.get('exception_message')}")
            out.append((rule, res.result))
        return out

    def check(self, suspects: DataFrame, timeline: list[dict[str, Any]]
              ) -> tuple[dict[tuple, list[str]], dict[str, int]]:
        """(bronze keys -> reasons for quarantine, rule -> failing rows) for one batch:
        ``suspects``, its rows ``self.suspect`` selects, with ``inputs``; ``timeline``, the
        bronze keys, seq_gap and agent_group of its rows whose gap is not 0 or whose agent
        belongs to another group (``timeline_rows``).

        GE on Spark runs one job per metric (about ten seconds a batch, whatever its
        size), so one Spark pass selects the rows some rule could flag (usually none)
        and GE validates those, in pandas, in this process: the failure counts and row
        ids are the same as over the whole batch. A first GE pass counts failures per
        rule; only when a quarantine rule failed does a second pass ask for the rows' ids.
        """
        import pandas as pd

        frames = [pd.DataFrame.from_records([r.asDict() for r in suspects.collect()], columns=suspects.columns),
                  pd.DataFrame.from_records(timeline, columns=[*BRONZE_KEYS, *sorted(TIMELINE_COLUMNS)])]
        failures: dict[str, int] = {}
        reasons: dict[tuple, list[str]] = {}
        for definition, df in zip(self.definitions, frames):
            counts = self._run(definition, df, {"result_format": "SUMMARY"})
            failures.update({rule.name: int(res.get("unexpected_count") or 0) for rule, res in counts})
            if not any(failures[rule.name] for rule, _ in counts if rule.quarantine):
                continue
            for rule, res in self._run(definition, df, {"result_format": "COMPLETE",
                                                        "unexpected_index_column_names": BRONZE_KEYS}):
                if rule.quarantine:
                    for row in res.get("unexpected_index_list") or []:
                        key = (str(row["topic"]), int(row["kafka_partition"]), int(row["kafka_offset"]))  # not numpy's
                        reasons.setdefault(key, []).append(rule.name)
        return reasons, failures


def _suites(config: PipelineConfig) -> tuple[list[Rule], list[Any]]:
    """The rules and GE's validation definitions of the two suites, built once per process and rule set
    (each run built GE's context again: 0.3-0.8 s, six times in the demo's process). Rule sets compare by
    what each rule checks, so a rule that comes to read another setting needs no change here."""
    every = rules(config)
    key = tuple((r.name, r.quarantine, r.expectation.expectation_type,
                 repr(sorted(r.expectation.configuration.kwargs.items()))) for r in every)
    if key not in _SUITES:
        _SUITES[key] = (every, _definitions(every, _row_rules(every)))
    return _SUITES[key]


_SUITES: dict[tuple[Any, ...], tuple[list[Rule], list[Any]]] = {}


def _row_rules(every: list[Rule]) -> list[Rule]:
    return [r for r in every if r.expectation.column not in TIMELINE_COLUMNS]


def _definitions(every: list[Rule], row_rules: list[Rule]) -> list[Any]:
    """An ephemeral GE context with the row and timeline suites' validation definitions."""
    import great_expectations as gx

    context = gx.get_context(mode="ephemeral")
    try:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context.variables.progress_bars = ProgressBarsConfig(globally=False)
    except (ImportError, AttributeError):
        pass
    source = context.data_sources.add_pandas(name="bronze")
    batch = source.add_dataframe_asset(name="telemetry_batch").add_batch_definition_whole_dataframe("batch")
    definitions = []
    for name, suite_rules in (("rows", row_rules), ("timeline", [r for r in every if r not in row_rules])):
        suite = context.suites.add(gx.ExpectationSuite(
            name=f"telemetry_v1_{name}", expectations=[r.expectation for r in suite_rules]))
        definitions.append(context.validation_definitions.add(
            gx.ValidationDefinition(name=f"telemetry_v1_{name}", data=batch, suite=suite)))
    return definitions


ENVELOPE = list(contract.schema()["properties"])


def _envelope() -> list[Column]:
    """The envelope's columns as events keeps them: an absent cluster id (an agent older than the
    field, or one that sent before its cluster answered) as ``contract.CLUSTER_UNKNOWN``, so a
    group's key is never null (see ``catalog.GROUP_KEY``)."""
    return [F.coalesce(F.col(c), F.lit(contract.CLUSTER_UNKNOWN)).alias(c) if c == "cluster_id" else F.col(c)
            for c in ENVELOPE]
SUSPECTED_BY = "suspected_by"


def _event_rows(validator: Validator, parsed: DataFrame, batch_id: int) -> DataFrame:
    """Typed silver event rows of every parsed row: the envelope, raw body, a struct per
    body definition, provenance, and ``suspected_by``: the row rules that could flag the
    row (GE then decided; the rows it failed are deleted), null for most rows. Delta
    keeps a null count per file, so reading the suspects skips every file without one.

    Unparsable rows land too (``_corrupt_record`` holds their text; malformed_json
    suspects them) and are deleted with the other failures: no filter here, because
    Spark pushes a filter on ``_corrupt_record`` below the projection that parses the
    JSON and inlines the parse into it, so each row was parsed twice (measured on 1M
    events, noop sink: 16.2 s with the filter, 12.3 s without)."""
    return with_checks(parsed).select(
        *_envelope(), *ts.definitions(), ts.CORRUPT_COLUMN, ts.LATER_VERSION_COLUMN,
        "topic", "kafka_partition", "kafka_offset", "kafka_timestamp",
        F.to_date(F.timestamp_millis("event_time_ms")).alias("event_date"),
        F.lit(batch_id).cast("bigint").alias("validate_batch"), validator.suspected_by.alias(SUSPECTED_BY))


def _repeats(good: DataFrame, earlier: DataFrame | None) -> DataFrame:
    """Bronze keys of the ``good`` rows that repeat an event id: one of an earlier batch
    (``earlier``, its events), or an earlier record of this batch (by bronze position).
    A resent event keeps its first copy."""
    first = Window.partitionBy("event_id").orderBy(*BRONZE_KEYS)
    ranked = good.withColumn("_rank", F.row_number().over(first))
    repeats = ranked.where("_rank > 1")
    if earlier is not None:
        resent = ranked.where("_rank = 1").join(earlier.select("event_id"), "event_id", "left_semi")
        repeats = repeats.unionByName(resent)
    return repeats.select(*BRONZE_KEYS)


def _suspects(validator: Validator, typed: DataFrame) -> DataFrame:
    """The rows of ``typed`` (a batch's rows as they landed in events) some row rule could
    flag, with the bronze keys and the columns the rules read."""
    checked = with_checks(typed)
    return checked.where(validator.suspect).select(*validator.inputs(checked))


def _id_stats(landed: DataFrame) -> Row:
    """The batch's rows, event ids and distinct ids.

    Ids compared by a 64-bit hash, a narrower shuffle than the id strings (this count took
    33.5 s at 10M events with strings, 17.1 s with hashes). As many distinct hashes as ids
    proves the ids distinct; a collision only sends the batch through the exact repeat search."""
    return landed.agg(F.count("*").alias("rows"), F.count("event_id").alias("ids"),
                      F.count_distinct(F.when(F.col("event_id").isNotNull(), F.xxhash64("event_id")))
                      .alias("distinct_ids")).first()


def _earlier_events(spark: SparkSession, lake_path: str, landed: DataFrame, batch_id: int) -> DataFrame | None:
    """The events of earlier batches an event of this one could repeat, None when there are none.

    A resent event is the same event: same group, same time, so the same event date. Only
    those dates' files of earlier batches are read for repeats, not the groups' history."""
    scope = (landed.where(F.col("group_id").isNotNull()).select(*catalog.GROUP_KEY, "event_date").distinct()
             .collect())
    if not scope:
        return None
    groups = sorted({(r.cluster_id, r.group_id) for r in scope})
    dates = sorted({r.event_date for r in scope if r.event_date})
    earlier = (lake.rows_of(spark, lake_path, catalog.EVENTS, catalog.GROUP_KEY, groups)
               .where((F.col("validate_batch") < batch_id) & F.col("event_date").isin(dates)))
    if not dates or earlier.limit(1).isEmpty():
        return None
    return earlier


def _sequence_findings(landed: DataFrame, known: DataFrame | None) -> tuple[list[Row], list[dict[str, Any]]]:
    """The batch's sequence gaps, and the rows the timeline rules check (``timeline_rows``)."""
    gaps = sequences.gaps(landed.select("agent_id", "seq", *BRONZE_KEYS), known).collect()
    conflicts = sequences.group_conflicts(landed.select("agent_id", "group_id", *BRONZE_KEYS), known)
    return gaps, timeline_rows(gaps, conflicts.collect() if conflicts is not None else [])


def _quarantine(spark: SparkSession, lake_path: str, batch: DataFrame, batch_id: int,
                reasons: dict[tuple, list[str]]) -> DataFrame:
    """Write the quarantined rows with their reasons (the table is created on the first batch);
    their bronze keys and reasons."""
    bad = spark.createDataFrame([(*k, v) for k, v in sorted(reasons.items())],
                                f"{catalog.ddl_of(catalog.KAFKA_PLACE)}, reasons array<string>")
    if reasons or not lake.exists(spark, lake_path, catalog.QUARANTINE):
        quarantined = batch.join(F.broadcast(bad), list(BRONZE_KEYS)).select(
            *catalog.BRONZE.column_names(), "reasons", F.lit(batch_id).cast("bigint").alias("validate_batch"))
        if not reasons:  # create the table empty, without reading the batch to join it with nothing
            quarantined = spark.createDataFrame([], quarantined.schema)
        lake.insert_new(spark, lake_path, catalog.QUARANTINE, quarantined)
    return bad


def _drop_repeats(spark: SparkSession, config: PipelineConfig, batch_id: int, good: DataFrame,
                  earlier: DataFrame | None, delete: bool) -> int:
    """How many ``good`` rows repeat an event id; with ``delete``, those rows leave events."""
    with lake.spilled(spark, _repeats(good, earlier), f"{config.checkpoint_path}/validate_repeats") as repeats:
        n_repeats = repeats.count()
        if delete and n_repeats:
            _delete_landed(spark, config.lake_path, batch_id, repeats)
    return n_repeats


def _keep_or_drop(spark: SparkSession, lake_path: str, batch_id: int, passed: bool, bad: DataFrame | None,
                  known: DataFrame | None) -> None:
    """A failed batch's events all leave; a passed one's quarantined rows (``bad``) leave and its
    agents' sequence runs are recorded."""
    of_batch = F.expr(f"validate_batch = {int(batch_id)}")
    if not passed:
        lake.delete_rows(spark, lake_path, catalog.EVENTS, of_batch)
        return
    if bad is not None:
        _delete_landed(spark, lake_path, batch_id, bad.select(*BRONZE_KEYS))
    kept = lake.read(spark, lake_path, catalog.EVENTS).where(of_batch).select("agent_id", "group_id", "seq")
    sequences.record(spark, lake_path, batch_id, kept, known)


def validate_batch(spark: SparkSession, config: PipelineConfig, validator: Validator,
                   batch: DataFrame, batch_id: int) -> dict[str, Any]:
    """Validate one bronze batch, write quarantine, events and the summary; the summary row.

    The JSON is parsed once: every row lands in ``events`` as it is parsed, the rules run
    over columns read back from there (Parquet, not JSON), and the rows that failed a
    rule or repeat an event are then deleted (deletion vectors: a few marks, no file
    rewritten). Parsing once instead of twice (checks, then the write) halves this
    stage. Until its summary row is written a batch is in flight: silver reads events
    only up to the last batch the summary passed (``lake.validated_through``), and a
    replay after a crash replaces what the crashed attempt landed.
    """
    lake_path = config.lake_path
    this_batch = f"validate_batch = {int(batch_id)}"  # the rows of this batch, in events and in the summary
    # Replacing the batch's rows also drops what a crashed attempt landed, in the same commit.
    # A lake written before a column joined events (later_version_json) gets it here (replace_where merges schemas).
    lake.replace_where(spark, lake_path, catalog.EVENTS, _event_rows(validator, parse(batch), batch_id), this_batch)
    landed = lake.read(spark, lake_path, catalog.EVENTS).where(F.expr(this_batch))
    stats = _id_stats(landed)
    earlier = _earlier_events(spark, lake_path, landed, batch_id)
    known = sequences.known_runs(spark, lake_path, landed.select("agent_id").distinct(), batch_id)
    gaps, timeline = _sequence_findings(landed, known)
    reasons, failures = validator.check(_suspects(validator, landed.where(F.col(SUSPECTED_BY).isNotNull())), timeline)
    bad = _quarantine(spark, lake_path, batch, batch_id, reasons)
    rows = stats["rows"]
    passed = len(reasons) <= config.max_bad_row_fraction * rows
    good = landed.select("event_id", *BRONZE_KEYS)
    if reasons:
        good = good.join(F.broadcast(bad), list(BRONZE_KEYS), "left_anti")
    n_repeats, valid = 0, rows - len(reasons)
    if stats["distinct_ids"] < stats["ids"] or earlier is not None:  # some event id may repeat
        n_repeats = _drop_repeats(spark, config, batch_id, good, earlier, delete=passed)
    _keep_or_drop(spark, lake_path, batch_id, passed, bad if reasons else None, known)
    summary = {"validate_batch": batch_id, "rows": rows, "quarantined": len(reasons), "valid": valid,
               "duplicates": n_repeats, "new_events": valid - n_repeats,
               "sequence_gaps": failures.get("sequence_gap", 0),
               "missing_events": sum(max(r["seq_gap"], 0) for r in gaps),
               "rule_failures": failures, "passed": passed, "max_bad_row_fraction": config.max_bad_row_fraction}
    summary_df = spark.createDataFrame([summary], SUMMARY_DDL).withColumn("validated_at", F.current_timestamp())
    lake.replace_where(spark, lake_path, catalog.VALIDATION_SUMMARY, summary_df, this_batch)
    return summary


def timeline_rows(gaps: list[Row], conflicts: list[Row]) -> list[dict[str, Any]]:
    """One row per bronze key with its seq_gap and agent_group (None where it has neither)."""
    rows: dict[tuple, dict[str, Any]] = {}
    for found, column in ((gaps, "seq_gap"), (conflicts, "agent_group")):
        for r in found:
            key = tuple(r[k] for k in BRONZE_KEYS)
            row = rows.setdefault(key, {**dict(zip(BRONZE_KEYS, key)), "seq_gap": None, "agent_group": None})
            row[column] = r[column]
    return list(rows.values())


def _delete_landed(spark: SparkSession, lake_path: str, batch_id: int, keys: DataFrame) -> None:
    """Delete the rows of ``keys`` (bronze keys) that batch ``batch_id`` landed in events."""
    from delta.tables import DeltaTable

    (DeltaTable.forPath(spark, catalog.EVENTS.location(lake_path)).alias("t")
     .merge(keys.alias("s"), (F.col("t.validate_batch") == batch_id) & lake.same_keys(BRONZE_KEYS, "t", "s"))
     .whenMatchedDelete().execute())


# The summary row as validate_batch builds it: the table's columns but the time it is written.
SUMMARY_DDL = catalog.ddl_of(tuple(c for c in catalog.VALIDATION_SUMMARY.columns if c[0] != "validated_at"))


def validated_version_path(config: PipelineConfig) -> Path | None:
    """Where a run that validated everything records the bronze version it started from, in
    the stream's checkpoint folder (a reset checkpoint forgets it too); None for a checkpoint
    on object storage (no shortcut there: the stream runs)."""
    return None if "://" in config.checkpoint_path else Path(config.checkpoint_path) / "validate" / "bronze_version"


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """Validate every bronze row not validated yet (streaming over bronze, available-now).

    Bronze unchanged since a run that validated all of it: nothing to do, without GE's set-up
    and the stream's start, the fixed costs a quiet hourly run paid for nothing."""
    bronze = catalog.BRONZE.location(config.lake_path)
    if not lake.exists(spark, config.lake_path, catalog.BRONZE):
        raise LensError(f"no bronze table at {bronze}: run `rebalance-lens pipeline run ingest` first")
    totals: dict[str, int] = {"batches": 0, "rows": 0, "quarantined": 0, "duplicates": 0, "new_events": 0}
    version = lake.version(spark, config.lake_path, catalog.BRONZE)
    recorded = validated_version_path(config)
    if recorded is not None and recorded.is_file() and recorded.read_text() == str(version):
        progress("validate: no new bronze rows; nothing to do")
        return totals
    validator = Validator(config)
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
                          f"{catalog.QUARANTINE.location(config.lake_path)} with their reasons. Fix the "
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
    if recorded is not None:  # available-now read bronze through at least ``version``
        recorded.parent.mkdir(parents=True, exist_ok=True)
        recorded.write_text(str(version))
    return totals
