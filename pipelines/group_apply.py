"""Run a pure Python function over the rows of each group, with rows moved by Arrow.

The per-group logic (ownership intervals, handoffs, episodes) is plain Python over
dicts so it can be tested without Spark. The JVM shuffles and sorts the rows by the
key; each Python worker streams its sorted partition as Arrow record batches, hands
``fn`` one group's rows at a time and returns ``fn``'s output as Arrow: columnar both
ways, with no per-row pickling (the ``Row``/RDD path this replaced spent most of its
time pickling rows and converting them back in ``createDataFrame``).

``mapInArrow`` over a repartitioned and sorted DataFrame rather than
``groupBy().applyInArrow``: both shuffle and sort the same way, and on the 1M-event
benchmark lake (a shared 2-core machine, so noisy) ``mapInArrow`` was as fast or up to
~15 % faster: it ships full batches rather than one Arrow stream per group.
``spark.sql.execution.arrow.maxRecordsPerBatch`` stays at Spark's default: 1k, 10k and
100k rows per batch measured the same within noise.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

GroupFunction = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
# A group's rows streamed in and its output streamed out: for a group too large to hold (a
# partition of __consumer_offsets between two runs), with output in batches of STREAM_BATCH rows.
StreamFunction = Callable[[Iterator[dict[str, Any]]], Iterator[dict[str, Any]]]
STREAM_BATCH = 10_000


def apply_per_group(rows: DataFrame, key: str | Sequence[str], fn: GroupFunction, ddl: str,
                    order: Sequence[str] = (), tasks_by: str | None = None) -> DataFrame:
    """``fn`` over the rows (as dicts) of each ``key`` group (one column or several), one call
    per group, each group's rows sorted by ``order`` (nulls first); its dicts become rows of ``ddl``.
    ``tasks_by``: a column of ``key`` whose values each get a task of their own (shares of one large
    group, which hashing the key would put in one task a quarter of the time on 4 partitions).

    Each output dict must carry every column of ``ddl`` (a missing one is a bug in ``fn``
    and raises ``KeyError`` rather than becoming a null). Struct values may be dicts and
    arrays lists: pyarrow converts them by field name.
    """
    def whole(group: Iterator[dict[str, Any]], to_batch: Callable[[list[dict[str, Any]]], pa.RecordBatch]):
        yield to_batch(fn(list(group)))

    return _per_group(rows, key, whole, ddl, order, tasks_by)


def stream_per_group(rows: DataFrame, key: str | Sequence[str], fn: StreamFunction, ddl: str,
                     order: Sequence[str] = ()) -> DataFrame:
    """``apply_per_group`` for a group too large to hold: ``fn`` reads the group's rows (sorted by
    ``order``, nulls first) as they stream from Arrow and yields its output dicts, which go back
    in batches of ``STREAM_BATCH``."""
    def streamed(group: Iterator[dict[str, Any]], to_batch: Callable[[list[dict[str, Any]]], pa.RecordBatch]):
        out = fn(group)
        while chunk := list(itertools.islice(out, STREAM_BATCH)):
            yield to_batch(chunk)

    return _per_group(rows, key, streamed, ddl, order)


def _per_group(rows: DataFrame, key: str | Sequence[str], each: Callable, ddl: str, order: Sequence[str],
               tasks_by: str | None = None) -> DataFrame:
    """Rows shuffled and sorted by ``key`` then ``order``; ``each(group_rows, to_batch)`` per group
    yields Arrow batches (``to_batch`` turns a list of output dicts into one)."""
    schema = StructType.fromDDL(ddl)  # parsed by the driver's JVM; the workers get the Arrow schema
    arrow_schema = to_arrow_schema(schema)
    names = arrow_schema.names
    keys = [key] if isinstance(key, str) else list(key)

    def key_of(row: dict[str, Any]) -> tuple:
        return tuple(row[k] for k in keys)

    def to_batch(out: list[dict[str, Any]]) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({n: [row[n] for row in out] for n in names}, schema=arrow_schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # The partition is sorted by key, so a group is a run of rows, possibly spanning batches.
        rows_of_partition = itertools.chain.from_iterable(batch.to_pylist() for batch in batches)
        for _, group in itertools.groupby(rows_of_partition, key=key_of):
            yield from each(group, to_batch)

    spread = rows.repartition(*keys) if tasks_by is None else rows.repartitionByRange(tasks_by)
    return spread.sortWithinPartitions(*keys, *order).mapInArrow(run, schema)
