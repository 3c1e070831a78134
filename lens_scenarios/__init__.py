"""Fleet scenarios: real consumer groups under churn with ground truth per record (``runner``), and
synthetic telemetry of fleets described in code (``synthetic``) for tests and benchmarks. They make
the telemetry the pipelines are checked against; they import the agent, never the pipelines."""
