"""Reading a table's file bounds for the layout store: one data file's
:class:`~icefloe.optimizer.layout.FileBounds` from its manifest metrics, and a full rebuild from
the current file list (:func:`icefloe.base.tablestats.current_partitions`, the rolling
stats' partition keys). The rolling walk (:func:`icefloe.state.rolling.scan.catch_up`)
collects the deltas in its own pass over the manifests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icefloe.base.layoutspec import LayoutSpec
from icefloe.base.tablestats import PartitionFiles
from icefloe.optimizer.layout import FileBounds
from icefloe.state.layout import LayoutStore, signature


def file_bounds(spec: LayoutSpec, path: str, size: int, metrics: Sequence[Any]) -> FileBounds[str]:
    """One data file's key interval; ``metrics``: its lower and upper bounds, null and NaN
    counts (mappings or ``(field id, value)`` pairs, as manifests and ``inspect.files``
    hold them)."""
    lower, upper = spec.bounds(*metrics)
    return FileBounds(path, int(size), lower, upper)


def partition_bounds(
    spec: LayoutSpec, parts: Sequence[PartitionFiles]
) -> dict[str, list[FileBounds[str]]]:
    """Each partition's files' bounds, from ``current_partitions(..., layout=spec)``."""
    out: dict[str, list[FileBounds[str]]] = {}
    for part in parts:
        out.setdefault(part.key, []).extend(part.file_bounds())
    return out


def rebuild(
    store: LayoutStore, name: str, spec: LayoutSpec, parts: Sequence[PartitionFiles]
) -> set[str]:
    """Replace the table's layout by its current files' (``parts``, read with
    ``layout=spec``); the partitions it now has."""
    files = partition_bounds(spec, parts)
    store.replace(name, signature(spec), files)
    return set(files)
