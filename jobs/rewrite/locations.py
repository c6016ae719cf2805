"""Data file locations: which are on the local file system, and fresh ones for new files."""

from __future__ import annotations

import uuid
from typing import Any


def local_path(location: str) -> str | None:
    """The local file system path of a ``file:`` (or scheme-less) location, else None.

    Nothing is unescaped: Iceberg escapes partition values in locations (``a%2Fb``) and
    Hadoop's local file system writes those names as they are."""
    if location.startswith("file://"):
        return location[len("file://") :]
    if location.startswith("file:"):
        return location[len("file:") :]
    if location.startswith("/"):
        return location
    return None


def new_locations(table: Any, spec: Any, partition: Any, n: int) -> list[str]:
    """``n`` fresh data file locations in ``partition`` of ``spec`` of the Java ``table``,
    by the table's location provider, as Iceberg's own writers ask it (``OutputFileFactory``):
    an unpartitioned spec's files by name alone (its partition path is empty, and the
    provider would put ``data//name``)."""
    provider = table.locationProvider()
    stem = uuid.uuid4()
    names = [f"icefloe-{stem}-{i:05d}.parquet" for i in range(n)]
    if spec.isUnpartitioned() or partition is None:
        return [str(provider.newDataLocation(name)) for name in names]
    return [str(provider.newDataLocation(spec, partition, name)) for name in names]


LOCATION_PROVIDER_IMPL = "write.location-provider.impl"
OBJECT_STORAGE_ENABLED = "write.object-storage.enabled"


def data_location(properties: dict[str, str], table_location: str) -> str:
    """Where the table's location provider puts data files (Iceberg's own fallback order:
    ``write.data.path``, then the object-storage or folder-storage path, then ``data/``)."""
    keys = ["write.data.path"]
    if properties.get(OBJECT_STORAGE_ENABLED, "false").lower() == "true":
        keys.append("write.object-storage.path")
    keys.append("write.folder-storage.path")
    for key in keys:
        if properties.get(key):
            return properties[key].rstrip("/")
    return f"{table_location.rstrip('/')}/data"


def attempt_table(jvm: Any, table: Any, rewrite_id: str) -> tuple[Any, str | None]:
    """The Java ``table`` as Spark's writer should see it for one rewrite, and the prefix
    that all its new files then share.

    Spark's Iceberg writer names files itself (with Spark's query id, unknown in
    advance), so a killed attempt's files could not be told from a concurrent writer's.
    The table handed to the writer is the same metadata with one difference: its location
    provider puts data files under ``<data>/icefloe-<rewrite id>/`` (then the usual
    partition folders), a prefix no one else writes under. A table with its own location
    provider class is left alone (no prefix)."""
    metadata = table.operations().current()
    properties = {str(k): str(v) for k, v in dict(table.properties()).items()}
    if properties.get(LOCATION_PROVIDER_IMPL):
        return table, None
    prefix = f"{data_location(properties, str(metadata.location()))}/icefloe-{rewrite_id}"
    changed = jvm.java.util.HashMap(table.properties())
    changed.put("write.data.path", prefix)
    provider = jvm.org.apache.iceberg.LocationProviders.locationsFor(metadata.location(), changed)
    ops = jvm.org.apache.iceberg.StaticTableOperations(metadata, table.io(), provider)
    return jvm.org.apache.iceberg.BaseTable(ops, table.name()), prefix + "/"
