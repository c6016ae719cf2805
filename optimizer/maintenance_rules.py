"""Table health beyond data files, and when maintenance is worth doing.

A streaming table degrades in ways its data-file entropy does not show: every commit adds
at least one small **manifest** (planning reads them all), every commit adds a **snapshot**
(metadata JSON and manifest lists grow until snapshots are expired), merge-on-read
**delete files** pile up (every read applies them), and failed writes leave **orphan
files**. :class:`MetadataHealth` is a table's state on those axes; it is computed from the
current snapshot's manifest list and the table metadata alone, never from data files.

The entropy math is the data files' unchanged: manifests are scored against a manifest
target size (Iceberg's ``commit.manifest.target-size-bytes``, 8 MiB by default). When each
action pays is its own module's rule (``icefloe.optimizer.actions``: ``rewrite_manifests``,
``expire_snapshots``, ``remove_orphan_files``, ``compute_stats``, ``skew_report``; a partition's
``compact_deletes``: ``icefloe.optimizer.verdict``); this module holds what they read.

Pure: no clocks (``now_ms`` is passed in), no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from icefloe.optimizer.entropy import PartitionStats, stats_from_sizes
from icefloe.optimizer.skew_report import ReportAge

DEFAULT_MANIFEST_TARGET = 8 << 20  # Iceberg's commit.manifest.target-size-bytes


@dataclass(frozen=True)
class MetadataHealth:
    """A table's metadata at one snapshot: manifests (entropy against ``manifest_target``),
    snapshots, the metadata JSON's size."""

    snapshot_id: int | None
    manifest_target: int
    manifests: PartitionStats
    snapshots: int
    oldest_snapshot_ms: int | None
    expirable: tuple[int, ...] = ()  # timestamps (ms) of snapshots beyond the newest retained
    metadata_bytes: int = 0
    # from the snapshot's summary: rows, delete files and the rows they delete
    data_rows: int = 0
    delete_files: int = 0
    deleted_rows: int = 0
    # Iceberg's statistics (``compute_stats``): the snapshot the newest table statistics
    # in the current ancestry describe (None: none), the rows added or deleted in the
    # snapshots since (a replace counts its rows twice), and the table's data bytes
    stats_snapshot_id: int | None = None
    stats_changed_rows: int = 0
    data_bytes: int = 0
    # hot-key reports in the table's properties (``skew_report``), one per column
    skew_reports: tuple[ReportAge, ...] = ()

    @property
    def delete_ratio(self) -> float:
        return self.deleted_rows / self.data_rows if self.data_rows else 0.0

    @classmethod
    def of(
        cls,
        snapshot_id: int | None,
        manifest_sizes: Iterable[int],
        manifest_target: int,
        snapshot_times_ms: Iterable[int],
        metadata_bytes: int,
        retain_last: int,
        deletes: tuple[int, int, int] = (0, 0, 0),
        statistics: tuple[int | None, int, int] = (None, 0, 0),
        skew_reports: tuple[ReportAge, ...] = (),
    ) -> MetadataHealth:
        """From the current snapshot's manifest sizes and every snapshot's timestamp;
        ``deletes``: (data rows, delete files, deleted rows) of the current snapshot;
        ``statistics``: (the statistics' snapshot, rows changed since, data bytes);
        ``skew_reports``: the hot-key reports' ages."""
        times = sorted(snapshot_times_ms)
        return cls(
            snapshot_id,
            manifest_target,
            stats_from_sizes(manifest_sizes, manifest_target),
            len(times),
            times[0] if times else None,
            tuple(times[: max(0, len(times) - retain_last)]),
            metadata_bytes,
            *deletes,
            *statistics,
            skew_reports,
        )


@dataclass(frozen=True)
class MaintenanceRules:
    """A table's resolved ``maintenance`` policy, in bytes and milliseconds."""

    manifest_tolerance: int
    min_manifests: int
    snapshot_max_age_ms: int
    retain_last: int
    expire_interval_ms: int
    orphan_interval_ms: int
    delete_ratio: float
    settings: Mapping[str, float] = field(default_factory=dict)  # registered actions' keys
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # ... of column names

    def setting(self, key: str, default: float) -> float:
        """A registered action's setting (``icefloe.optimizer.actions``): the policy's, else
        ``default`` (the action's own)."""
        return self.settings.get(key, default)

    def names(self, key: str) -> tuple[str, ...]:
        """A registered action's setting of column names: the policy's, else none."""
        return tuple(self.columns.get(key, ()))


@dataclass(frozen=True)
class Need:
    """One maintenance action worth doing: its queue cost and benefit, and why."""

    action: str
    cost_bytes: int
    benefit: float
    reason: str
