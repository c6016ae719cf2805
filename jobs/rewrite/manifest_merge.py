"""A rewrite's commit merges the table's small manifests when that is cheap: no extra snapshot.

Every commit a streaming writer makes leaves a small manifest, and a fresh reader opens
each one to plan a scan. ``RewriteFiles`` is one of Iceberg's merging snapshot producers:
its commit bin-packs the current manifests into ``commit.manifest.target-size-bytes``
bins and rewrites each bin of several manifests into one, but only once a bin holds
``commit.manifest.min-count-to-merge`` (100) manifests. Iceberg's ``rewrite_data_files``
leaves the merge at that count; a separate ``rewrite_manifests`` call costs a snapshot of
its own.

:func:`merge_small_manifests` lowers that count to 2 for one commit when the manifests
under the target add up to at most one target (rewriting them costs at most one
manifest's write, in the same ``replace`` snapshot). It sets the operation's own merge
manager (Java reflection on ``MergingSnapshotProducer.mergeManager`` and
``ManifestMergeManager.minCountToMerge``), not the table's property: nothing in the
table's metadata changes, and a catalog principal allowed to write data but not
properties can still commit. ``commit.manifest-merge.enabled=false`` still turns merging
off (Iceberg checks it first). An Iceberg without those fields leaves the count as it is.
"""

from __future__ import annotations

from typing import Any

from icefloe.base.config.maintenance_policy import MANIFEST_TARGET_PROPERTY
from icefloe.optimizer.maintenance_rules import DEFAULT_MANIFEST_TARGET

MERGE_AT = 2
MAX_LISTED = 2_000
"""Manifests listed at most to decide (a table with more has its own maintenance)."""


def small_manifests(table: Any, target: int) -> tuple[int, int]:
    """(count, bytes) of the current snapshot's data manifests under ``target`` bytes,
    or (0, 0) when there is no snapshot or more than :data:`MAX_LISTED` manifests."""
    snapshot = table.currentSnapshot()
    if snapshot is None:
        return 0, 0
    manifests = snapshot.dataManifests(table.io())
    if manifests.size() > MAX_LISTED:
        return 0, 0
    lengths = [int(m.length()) for m in manifests]
    small = [n for n in lengths if n < target]
    return len(small), sum(small)


def merge_small_manifests(table: Any, operation: Any) -> int:
    """Let ``operation`` (a ``RewriteFiles`` not yet committed) merge the table's small
    manifests when they fit one target; how many it may merge (0: left as they are)."""
    try:
        raw = table.properties().getOrDefault(MANIFEST_TARGET_PROPERTY, "")
        target = int(raw) if raw else DEFAULT_MANIFEST_TARGET
    except ValueError:
        return 0
    count, total = small_manifests(table, target)
    if count < MERGE_AT or total > target:
        return 0
    try:
        field = _superclass(operation, "MergingSnapshotProducer").getDeclaredField("mergeManager")
        field.setAccessible(True)
        manager = field.get(operation)
        minimum = _superclass(manager, "ManifestMergeManager").getDeclaredField("minCountToMerge")
        minimum.setAccessible(True)
        minimum.setInt(manager, MERGE_AT)
    except Exception:  # another Iceberg: Iceberg's own count applies
        return 0
    return count


def _superclass(obj: Any, name: str) -> Any:
    """The class ``org.apache.iceberg.<name>`` among ``obj``'s superclasses (found from
    the object: Iceberg's classes live in Spark's class loader, not py4j's)."""
    cls = obj.getClass()
    while cls is not None and cls.getName() != f"org.apache.iceberg.{name}":
        cls = cls.getSuperclass()
    if cls is None:
        raise LookupError(name)
    return cls
