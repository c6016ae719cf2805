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
    by the table's location provider (as Iceberg's own writers name them)."""
    provider = table.locationProvider()
    stem = uuid.uuid4()
    return [
        str(provider.newDataLocation(spec, partition, f"icefloe-{stem}-{i:05d}.parquet"))
        for i in range(n)
    ]
