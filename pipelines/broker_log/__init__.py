"""The broker source: every group's rebalance history from the broker's own ``__consumer_offsets``.

Data flow, one module per step:
- ``schema``, ``schema_set``: Kafka's message schemas, read from the pinned (or a newer) jar;
- ``wire``, ``message_reader``: a schema at a version compiled into a reader of its bytes;
- ``records``, ``consumer_protocol``: a record's key and value decoded, unknown types and
  versions counted and skipped;
- ``offsets_topic``: the raw records read from the topic (the edge that talks to Kafka);
- ``topic_ids``: topic ids resolved to names;
- ``classic_history``, ``consumer_history``: per group, its generations or epochs;
- ``ownership_changes``: per partition, who owned it from when;
- ``commit_window``: the commits the figures need around each ownership change.
"""
