"""rebalance-lens pipelines: telemetry to Delta (bronze, silver, gold) and the tooling around it."""
