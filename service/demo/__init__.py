"""The demo application: a streaming-ingest warehouse, icefloe against Iceberg, charts."""
