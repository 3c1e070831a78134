"""Bronze: the telemetry topic landed in Delta as raw values plus Kafka metadata.

Structured Streaming with an available-now trigger: each run reads what arrived since
the last one and stops. The checkpoint and the Delta sink's transaction log together
make the landing exactly once: a run killed half way replays the same offsets, and
the sink skips a batch it already committed.
"""
from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lens_runtime.errors import LensError
from pipelines import catalog
from pipelines.config import PipelineConfig, Progress


def check_topic(config: PipelineConfig) -> int:
    """The topic's partition count; a clear error when the broker or the topic is missing."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    if not config.bootstrap_servers:
        raise LensError("no Kafka bootstrap servers: pass --bootstrap HOST:PORT, set LENS_KAFKA_BOOTSTRAP, "
                        "or start the local broker with `rebalance-lens kafka up`")
    admin = AdminClient({"bootstrap.servers": config.bootstrap_servers, "socket.timeout.ms": 10000})
    try:
        metadata = admin.list_topics(timeout=15)  # all topics: asking for one would auto-create it
    except KafkaException as err:
        raise LensError(f"cannot reach Kafka at {config.bootstrap_servers} ({err}): start it with "
                        "`rebalance-lens kafka up` or pass the right --bootstrap") from err
    topic = metadata.topics.get(config.topic)
    if topic is None or topic.error is not None:
        raise LensError(f"topic {config.topic!r} does not exist on {config.bootstrap_servers}: start the agent "
                        "(it creates it on first send) or pass --topic with the telemetry topic")
    return len(topic.partitions)


def run(spark: SparkSession, config: PipelineConfig, progress: Progress = print) -> dict[str, int]:
    """Land the new records of the topic in bronze; ``config.since_ms`` sets where a first run starts."""
    check_topic(config)
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", config.bootstrap_servers)
              .option("subscribe", config.topic)
              .option("failOnDataLoss", "false"))
    if config.since_ms is not None:
        reader = reader.option("startingTimestamp", str(config.since_ms))
    else:
        reader = reader.option("startingOffsets", "earliest")
    if config.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    for key, value in config.kafka_options.items():
        reader = reader.option(f"kafka.{key}", value)
    raw = reader.load().select(
        F.col("topic"), F.col("partition").alias("kafka_partition"), F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"), F.col("key").cast("string").alias("key"), F.col("value"),
        F.to_date("timestamp").alias("date"))
    query = (raw.writeStream.format("delta")
             .option("checkpointLocation", f"{config.checkpoint_path}/ingest")
             .partitionBy(*catalog.BRONZE.partition_by)
             .trigger(availableNow=True)
             .start(catalog.BRONZE.location(config.lake_path)))
    query.awaitTermination()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    progress(f"ingest: {rows} new record(s) from {config.topic}")
    return {"rows": rows}
