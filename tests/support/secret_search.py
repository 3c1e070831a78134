"""Looking for a string in everything the system wrote: the telemetry topic's records, every
Delta table of a lake (SQL marts included) row by row, and plain files (logs, the report, the
tables' logs). Parquet is compressed, so tables are searched through Spark, as text: every
column turned to JSON, binary columns (bronze's values) read as UTF-8 first."""
from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T


def delta_tables(root: Path) -> list[Path]:
    """Every Delta table under ``root`` (a folder holding ``_delta_log``)."""
    return sorted(p.parent for p in root.rglob("_delta_log") if p.is_dir())


def tables_containing(spark: SparkSession, root: Path, needle: str) -> dict[str, int]:
    """Per Delta table under ``root`` (path relative to it), the rows whose text holds ``needle``;
    tables without such a row are left out."""
    out = {}
    for path in delta_tables(root):
        df = spark.read.format("delta").load(str(path))
        as_text = [F.col(f"`{f.name}`").cast("string").alias(f.name) if isinstance(f.dataType, T.BinaryType)
                   else F.col(f"`{f.name}`") for f in df.schema.fields]
        hits = df.select(F.to_json(F.struct(*as_text)).alias("row")).where(F.col("row").contains(needle)).count()
        if hits:
            out[str(path.relative_to(root))] = hits
    return out


def files_containing(root: Path, needle: str) -> list[str]:
    """Files under ``root`` (or ``root`` itself) whose bytes hold ``needle``."""
    want = needle.encode()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return [str(p) for p in files if want in p.read_bytes()]


def topic_containing(bootstrap_servers: str, topic: str, needle: str) -> int:
    """Records of ``topic`` whose key, value or headers hold ``needle`` (read from the start to
    the end it has now)."""
    want = needle.encode()
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"search-{topic}",
                         "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        hits, left = 0, {p: end for p, end in ends.items() if end > 0}
        while left:
            msg = consumer.poll(5)
            assert msg is not None, f"{topic} ended before its watermarks {ends}"
            if msg.error():
                continue
            parts = [msg.key() or b"", msg.value() or b"", *[v or b"" for _, v in (msg.headers() or [])]]
            hits += any(want in part for part in parts)
            if msg.offset() + 1 >= left.get(msg.partition(), 0):
                left.pop(msg.partition(), None)
        return hits
    finally:
        consumer.close()
