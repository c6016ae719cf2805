"""Table health beyond data files, and when maintenance is worth doing.

A streaming table degrades in ways its data-file entropy does not show: every commit adds
at least one small **manifest** (planning reads them all), every commit adds a **snapshot**
(metadata JSON and manifest lists grow until snapshots are expired), merge-on-read
**delete files** pile up (every read applies them), and failed writes leave **orphan
files**. :class:`MetadataHealth` is a table's state on those axes; it is computed from the
current snapshot's manifest list and the table metadata alone, never from data files.

The entropy math is the data files' unchanged: manifests are scored against a manifest
target size (Iceberg's ``commit.manifest.target-size-bytes``, 8 MiB by default). Each rule
below says when an action pays:

* ``rewrite_manifests`` — the manifests' MSE is over tolerance² *and* at least
  ``min_manifests`` of them are undersized: one rewrite per that many commits, not one per
  commit (a rewrite of two tiny manifests leaves one tiny manifest: nothing gained);
* ``expire_snapshots`` — some snapshot beyond the newest ``retain_last`` is older than
  ``snapshot_max_age_ms``, and the last expiry is at least ``expire_interval_ms`` ago;
* ``remove_orphan_files`` — ``orphan_interval_ms`` since the last run (or since the table
  was first seen: a new table has nothing to clean yet), and never while it is *held*:
  another table's files lie under its location (``optimizer.locations``);
* ``compact_deletes`` (per partition, :func:`deletes_due`) — the rows its delete files
  delete reach ``delete_ratio`` of its data rows.

Pure: no clocks (``now_ms`` is passed in), no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from optimizer.entropy import PartitionStats, estimate, stats_from_sizes

DEFAULT_MANIFEST_TARGET = 8 << 20  # Iceberg's commit.manifest.target-size-bytes
TABLE_ACTIONS = ("rewrite_manifests", "expire_snapshots", "remove_orphan_files")


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
    ) -> MetadataHealth:
        """From the current snapshot's manifest sizes and every snapshot's timestamp;
        ``deletes``: (data rows, delete files, deleted rows) of the current snapshot."""
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


@dataclass(frozen=True)
class Need:
    """One maintenance action worth doing: its queue cost and benefit, and why."""

    action: str
    cost_bytes: int
    benefit: float
    reason: str


def manifests_due(health: MetadataHealth, rules: MaintenanceRules) -> Need | None:
    m = health.manifests
    if m.undersized < max(2, rules.min_manifests) or not m.needs_work(rules.manifest_tolerance):
        return None
    cost, benefit = estimate(m, health.manifest_target)
    return Need(
        "rewrite_manifests",
        cost,
        max(benefit, 1.0),
        f"{m.undersized} of {m.n} manifests under {health.manifest_target} bytes "
        f"(mse {m.mse:.4g} >= tolerance²)",
    )


def snapshots_due(
    health: MetadataHealth, rules: MaintenanceRules, now_ms: int, last_run_ms: int | None
) -> Need | None:
    cutoff = now_ms - rules.snapshot_max_age_ms
    old = [t for t in health.expirable if t < cutoff]
    if not old:
        return None
    if last_run_ms is not None and now_ms - last_run_ms < rules.expire_interval_ms:
        return None
    return Need(
        "expire_snapshots",
        health.metadata_bytes,
        float(len(old)),
        f"{len(old)} of {health.snapshots} snapshots past retention",
    )


def orphans_due(rules: MaintenanceRules, now_ms: int, last_run_ms: int) -> Need | None:
    if now_ms - last_run_ms < rules.orphan_interval_ms:
        return None
    hours = (now_ms - last_run_ms) / 3_600_000
    since = f"last orphan scan {hours:.1f} h ago" if last_run_ms > 0 else "no orphan scan yet"
    return Need("remove_orphan_files", 0, 1.0, since)


def table_needs(
    health: MetadataHealth,
    rules: MaintenanceRules,
    enabled: Iterable[str],
    now_ms: int,
    last_runs_ms: Mapping[str, int],
    held: Mapping[str, str] | None = None,
) -> list[Need]:
    """The table-level actions due among ``enabled``. ``last_runs_ms``: when each action
    last ran (or, for orphan removal, when the table was first seen). ``held``: actions
    that must not run whatever is due, action → why (orphan removal on a location another
    table shares: ``optimizer.locations.shared_location_hold``)."""
    on = set(enabled) - set(held or {})
    needs: list[Need | None] = []
    if "rewrite_manifests" in on:
        needs.append(manifests_due(health, rules))
    if "expire_snapshots" in on:
        needs.append(snapshots_due(health, rules, now_ms, last_runs_ms.get("expire_snapshots")))
    if "remove_orphan_files" in on:
        first = last_runs_ms.get("remove_orphan_files", now_ms)
        needs.append(orphans_due(rules, now_ms, first))
    return [n for n in needs if n is not None]


def deletes_due(stats: PartitionStats, delete_ratio: float) -> Need | None:
    """``compact_deletes`` for one partition: its delete files delete ``delete_ratio`` of
    its data rows or more."""
    if stats.delete_files == 0 or stats.delete_ratio < delete_ratio:
        return None
    return Need(
        "compact_deletes",
        stats.total_bytes,
        float(stats.deleted_rows),
        f"{stats.delete_files} delete files delete {stats.delete_ratio:.1%} of "
        f"{stats.data_rows} rows",
    )
