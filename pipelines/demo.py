"""The main job end to end on the embedded defaults.

Today: start Kafka, produce and consume records in a real group, land them in
Delta, MERGE a correction, read the table now and as of its first version, stop
everything. Later issues grow this into the fleet demo (scenarios, pipeline,
recommendations).
"""
from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from pipelines.runtime.kafka_broker import EmbeddedKafka
from pipelines.runtime.spark_session import SparkSettings, build_spark


def _step(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def _produce(bootstrap: str, topic: str, records: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        producer.produce(topic, key=str(i % 7), value=f"{i}")
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(30)


def _consume(bootstrap: str, topic: str, records: int) -> list[tuple[int, int, int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "group.protocol": "consumer"})
    consumer.subscribe([topic])
    rows: list[tuple[int, int, int]] = []
    deadline = time.monotonic() + 60
    try:
        while len(rows) < records and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                if msg.error() is None:
                    rows.append((msg.partition(), msg.offset(), int(msg.value())))
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return rows


def run_demo(records: int = 1000, lake: str | None = None, master: str | None = None) -> int:
    started = time.monotonic()
    _step("starting the embedded Kafka broker")
    with EmbeddedKafka() as broker:
        topic = f"demo-{uuid.uuid4().hex[:6]}"
        _step(f"broker at {broker.bootstrap_servers}; producing {records} records to {topic}")
        _produce(broker.bootstrap_servers, topic, records)
        rows = _consume(broker.bootstrap_servers, topic, records)
        _step(f"consumed {len(rows)} records in a KIP-848 (group.protocol=consumer) group")
        if len(rows) != records:
            print(f"[demo] FAILED: expected {records} records, got {len(rows)}")
            return 1

        _step("starting Spark with Delta")
        spark = build_spark(SparkSettings.resolve(master=master, lake=lake, app_name="rebalance-lens-demo"))
        try:
            from delta.tables import DeltaTable

            path = f"{SparkSettings.resolve(lake=lake).lake}/demo_records"
            df = spark.createDataFrame(rows, "partition INT, offset LONG, value LONG")
            df.write.format("delta").mode("overwrite").save(path)
            partition, offset, _ = rows[0]
            fix = spark.createDataFrame([(partition, offset, -1)], "partition INT, offset LONG, value LONG")
            (DeltaTable.forPath(spark, path).alias("t")
             .merge(fix.alias("f"), "t.partition = f.partition AND t.offset = f.offset")
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
            latest = spark.read.format("delta").load(path)
            version = DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]
            first = spark.read.format("delta").option("versionAsOf", version - 1).load(path)
            where = f"partition = {partition} AND offset = {offset}"
            _step(f"Delta table {path}: {latest.count()} rows at version {version}; record {partition}/{offset} "
                  f"is {latest.where(where).first().value} after the MERGE, "
                  f"{first.where(where).first().value} one version earlier (time travel)")
        finally:
            spark.stop()
    _step(f"done in {time.monotonic() - started:.1f} s; broker and Spark stopped")
    return 0
