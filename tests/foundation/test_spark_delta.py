"""Spark with Delta and the Kafka source, from the locally cached jars."""
from __future__ import annotations

from delta.tables import DeltaTable


def test_delta_write_merge_and_time_travel(spark, table_path):
    spark.createDataFrame([(1, "a"), (2, "b")], "id INT, v STRING").write.format("delta").save(table_path)
    updates = spark.createDataFrame([(2, "B"), (3, "c")], "id INT, v STRING")
    (DeltaTable.forPath(spark, table_path).alias("t")
     .merge(updates.alias("u"), "t.id = u.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    now = {r.id: r.v for r in spark.read.format("delta").load(table_path).collect()}
    assert now == {1: "a", 2: "B", 3: "c"}
    before = {r.id: r.v for r in spark.read.format("delta").option("versionAsOf", 0).load(table_path).collect()}
    assert before == {1: "a", 2: "b"}
    assert DeltaTable.forPath(spark, table_path).history().count() == 2


def test_spark_reads_a_kafka_topic_in_batch(spark, kafka, unique):
    topic = kafka.create_topic(f"spark-batch-{unique}", partitions=2)
    kafka.seed(topic, [f"v{i}" for i in range(50)])
    df = (spark.read.format("kafka")
          .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
          .option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest")
          .load())
    rows = df.selectExpr("CAST(value AS STRING) AS v", "partition", "offset").collect()
    assert sorted(r.v for r in rows) == sorted(f"v{i}" for i in range(50))
    assert {r.partition for r in rows} <= {0, 1}
