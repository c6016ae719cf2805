"""The runners of the table actions that are more than Iceberg procedures, as their specs
name them (``ActionSpec.runner``): each a :data:`~icefloe.jobs.maintenance.run.Runner`,
its parameters from the table's ``maintenance`` policy, its result checked from the
metadata before it counts (:mod:`icefloe.jobs.maintenance.run` then checks that every
file the snapshots it names reference exists)."""

from __future__ import annotations

from datetime import timedelta

from icefloe.base.catalog import load_table, spark_table_name
from icefloe.jobs.maintenance import procedures as maintenance
from icefloe.jobs.maintenance.manifests import driver_rewrite
from icefloe.jobs.maintenance.run import Ran, TableRun, check_expiry, check_manifests_rewrite


def driver_or_procedure(run: TableRun) -> maintenance.MaintenanceReport:
    """In the driver when the output is one manifest (``icefloe.jobs.maintenance.manifests``),
    else Iceberg's procedure."""
    m, name = run.maintenance, run.name
    target = m.manifest_target(run.before.properties)
    result = driver_rewrite(run.spark, spark_table_name(run.cfg, name), target, m.min_manifests)
    if result is None:
        return maintenance.rewrite_manifests(run.spark, run.cfg, name)
    return maintenance.MaintenanceReport(name, "rewrite_manifests", result)


def rewrite_manifests(run: TableRun) -> Ran:
    """Each snapshot it committed holds exactly its parent's live files; it deletes nothing,
    so only those snapshots' files are checked."""
    start = run.before.current_snapshot()
    report = driver_or_procedure(run)
    after = load_table(run.catalog, run.name)
    only = check_manifests_rewrite(after, None if start is None else start.snapshot_id)
    return Ran(
        report.result, {"manifest_rewrites_checked": len(only)}, frozenset(only), after=after
    )


def expire_snapshots(run: TableRun) -> Ran:
    """Every snapshot that had to stay did, and none that had to go is left."""
    m = run.maintenance
    cutoff = run.now - timedelta(hours=m.snapshot_max_age_hours)
    report = maintenance.expire_snapshots(
        run.spark, run.cfg, run.name, cutoff, m.retain_last, run.now
    )
    after = load_table(run.catalog, run.name)
    verified = check_expiry(run.before, after, int(cutoff.timestamp() * 1000), m.retain_last)
    return Ran(report.result, verified, None, after=after)


def remove_orphan_files(run: TableRun) -> Ran:
    """Refused on a location another table shares (unless allowed); a dry run lists."""
    m = run.maintenance
    cutoff = run.now - timedelta(hours=m.orphan_min_age_hours)
    report = maintenance.remove_orphan_files(
        run.spark,
        run.cfg,
        run.name,
        cutoff,
        run.dry_run,
        run.now,
        allow_shared={*m.allow_shared_location, *run.allow_shared},
    )
    return Ran(report.result, {}, None)
