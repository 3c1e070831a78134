"""rebalance-lens pipelines: the telemetry topic to Delta, stage by stage.

``stages.STAGES`` runs, in order, ``ingest`` (topic -> bronze), ``broker`` (each cluster's
``__consumer_offsets`` -> every group's history, when the broker source is on), ``validate``
(bronze -> silver/events, Great Expectations, quarantine), ``silver`` (member states, commits), ``gold``
(ownership, handoffs, episodes, metrics), ``recommend`` (what-if, recommendations) and ``sql``
(the dbt marts), each a function of ``(spark, config, progress)``. Every table is declared in
``catalog``; ``config`` holds every setting. Kept free of imports: Spark's Python workers import
the pure modules of ``gold``.
"""
