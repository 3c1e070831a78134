"""The local runtime every other part stands on: user-facing errors, where caches live, the pinned
JVM jars, the embedded Kafka broker and the one Spark session factory. Used by the pipelines, the
scenarios, the CLI and the tests (the agent's too); it imports none of them."""
