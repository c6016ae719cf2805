"""The demo application: a streaming-ingest warehouse, icefloe against Iceberg, charts."""

DEFAULT_ROUNDS = 6  # rounds of ingest, each followed by compaction: ``icefloe demo --rounds``
