"""The broker stage (``stage``): each cluster's ``__consumer_offsets`` tailed into the lake as
every group's history (``pipelines.broker_log`` decodes and rebuilds it), through the cluster's
Admin API (``cluster_admin``) and Spark's Kafka source."""
