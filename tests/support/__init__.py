"""Helpers the tests share: a Kafka cluster factory, agent group members, telemetry readers, fleets,
pipeline configs."""
