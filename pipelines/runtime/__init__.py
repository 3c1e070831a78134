"""The local runtime: JVM dependencies, the embedded Kafka broker and the Spark session."""
