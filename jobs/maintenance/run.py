"""A table's metadata maintenance as an actor's action: run it, then prove nothing was lost.

The procedures are Iceberg's own (``icefloe.jobs.maintenance.procedures``: guard rails and hard age
floors); their parameters come from the table's ``maintenance`` policy. A manifest rewrite whose
output is one manifest runs in the driver instead (``icefloe.jobs.maintenance.manifests``: Iceberg's
core ``RewriteManifests``, no Spark job). Each run is verified from
the metadata, exactly, before the action is acked:

* ``rewrite_manifests`` — the snapshot it committed holds exactly the live files (path,
  kind, record count) of its parent: the same files, so the same rows and the same content;
  a writer committing meanwhile changes neither snapshot;
* ``expire_snapshots`` — every snapshot that had to be retained (younger than the cutoff,
  the newest ``retain_last`` of the current history, or named by a branch or tag) still is,
  and no other snapshot older than the cutoff is left;
* every action — every file a retained snapshot references (its manifest list, manifests,
  data and delete files) exists, so time travel to each of them still reads (after a
  manifest rewrite, which deletes nothing, the snapshots it committed); after
  ``remove_orphan_files`` this is the proof that no referenced file was taken for an
  orphan, whatever a concurrent writer committed.

A failed verification raises :class:`~icefloe.base.errors.OperationFailed`: the action is
nacked and its error kept, as for a merge whose checksum differs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from icefloe.base.catalog import load_catalog, load_table, spark_table_name
from icefloe.base.config import Config
from icefloe.base.errors import OperationFailed, UsageError
from icefloe.jobs.maintenance import procedures as maintenance
from icefloe.jobs.maintenance.manifests import driver_rewrite
from icefloe.jobs.maintenance.skew_report import refresh_reports
from icefloe.optimizer.actions import BY_NAME, TABLE_ACTIONS, ActionSpec
from icefloe.optimizer.actions.skew_report import NAME as SKEW_REPORT
from icefloe.state.health import statistics_facts

Runner = Callable[[Any, Config, Any, str, Any, bool], tuple[dict[str, Any], dict[str, Any]]]
"""A registered action with neither Iceberg procedures nor a case below, run in Python:
(spark, cfg, catalog, table name, the table before, dry_run) → (its result, what it
verified); a failed check raises ``OperationFailed``."""

RUNNERS: Mapping[str, Runner] = {SKEW_REPORT: refresh_reports}


def live_files(table: Any, snapshot_id: int) -> dict[str, tuple[int, int]]:
    """path → (content kind, record count) of the live entries of one snapshot."""
    snap = table.metadata.snapshot_by_id(snapshot_id)
    out: dict[str, tuple[int, int]] = {}
    for manifest in snap.manifests(table.io) if snap is not None else []:
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            f = entry.data_file
            out[f.file_path] = (int(f.content), int(f.record_count))
    return out


def missing_files(table: Any, snapshot_ids: set[int] | None = None) -> list[str]:
    """Files a retained snapshot (or one of ``snapshot_ids``) references that do not exist
    (metadata first), sorted."""
    io = table.io
    wanted = {table.metadata_location}
    manifests: dict[str, Any] = {}
    for snap in table.metadata.snapshots:
        if snapshot_ids is not None and snap.snapshot_id not in snapshot_ids:
            continue
        wanted.add(snap.manifest_list)
        for m in snap.manifests(io):
            manifests.setdefault(m.manifest_path, m)
    wanted |= set(manifests)
    for m in manifests.values():
        for entry in m.fetch_manifest_entry(io, discard_deleted=True):
            wanted.add(entry.data_file.file_path)
    return sorted(path for path in wanted if not io.new_input(path).exists())


def _check_manifests_rewrite(table: Any, start: int | None) -> set[int]:
    """Verify each manifest rewrite committed on the current history since ``start``; the
    snapshots checked."""
    checked = set()
    node = table.current_snapshot()
    while node is not None and node.snapshot_id != start:
        props = node.summary.additional_properties if node.summary is not None else {}
        parent = node.parent_snapshot_id
        if "manifests-replaced" in props and parent is not None:
            if live_files(table, node.snapshot_id) != live_files(table, parent):
                raise OperationFailed(
                    f"rewrite_manifests snapshot {node.snapshot_id} does not hold exactly "
                    "its parent's files"
                )
            checked.add(node.snapshot_id)
        node = None if parent is None else table.metadata.snapshot_by_id(parent)
    return checked


def must_retain(table: Any, cutoff_ms: int, retain_last: int) -> set[int]:
    """Snapshots expiry must keep: younger than the cutoff, the newest ``retain_last``
    ancestors of the current snapshot, and every branch's or tag's snapshot."""
    keep = {s.snapshot_id for s in table.metadata.snapshots if s.timestamp_ms >= cutoff_ms}
    current = table.current_snapshot()
    node = current
    for _ in range(retain_last):
        if node is None:
            break
        keep.add(node.snapshot_id)
        parent = node.parent_snapshot_id
        node = None if parent is None else table.metadata.snapshot_by_id(parent)
    keep |= {ref.snapshot_id for ref in table.metadata.refs.values()}
    return keep


def _check_expiry(before: Any, after: Any, cutoff_ms: int, retain_last: int) -> dict[str, int]:
    keep = must_retain(before, cutoff_ms, retain_last)
    left = {s.snapshot_id: s.timestamp_ms for s in after.metadata.snapshots}
    lost = keep - set(left)
    if lost:
        raise OperationFailed(f"expire_snapshots removed retained snapshot(s) {sorted(lost)}")
    known_before = {s.snapshot_id for s in before.metadata.snapshots}
    stale = [s for s, ts in left.items() if s in known_before and s not in keep and ts < cutoff_ms]
    if stale:
        raise OperationFailed(f"expire_snapshots left expired snapshot(s) {sorted(stale)}")
    return {"snapshots_before": len(known_before), "snapshots_after": len(left)}


def _rewrite_manifests(
    spark: Any, cfg: Config, name: str, target: int, m: Any
) -> maintenance.MaintenanceReport:
    """In the driver when the output is one manifest (``icefloe.jobs.maintenance.manifests``),
    else Iceberg's procedure."""
    result = driver_rewrite(spark, spark_table_name(cfg, name), target, m.min_manifests)
    if result is None:
        return maintenance.rewrite_manifests(spark, cfg, name)
    return maintenance.MaintenanceReport(name, "rewrite_manifests", result)


def run_table_action(
    spark: Any,
    cfg: Config,
    name: str,
    action: str,
    now: datetime | None = None,
    dry_run: bool = False,
    allow_shared: Collection[str] = (),
) -> dict[str, Any]:
    """Run one table-level maintenance action with the table's policy, verified.
    ``allow_shared``: tables allowed to share the location of orphan removal, beside the
    policy's ``maintenance.allow_shared_location``."""
    if action not in TABLE_ACTIONS:
        raise UsageError(
            f"unknown maintenance action {action!r} (known: {', '.join(TABLE_ACTIONS)})"
        )
    now = now or datetime.now(UTC)
    catalog = load_catalog(cfg)
    before = load_table(catalog, name)
    spec = BY_NAME[action]
    if spec.calls is not None:  # a registered action run by its procedures alone
        return _run_calls(spark, cfg, catalog, name, spec, before, dry_run)
    if action in RUNNERS:  # a registered action run in Python, verified by itself
        return _run_own(spark, cfg, catalog, name, action, before, dry_run)
    m = cfg.policy_for(name, before.properties).maintenance
    start = before.current_snapshot()
    started = time.perf_counter()
    verified: dict[str, Any] = {}
    if action == "rewrite_manifests":
        report = _rewrite_manifests(spark, cfg, name, m.manifest_target(before.properties), m)
    elif action == "expire_snapshots":
        cutoff = now - timedelta(hours=m.snapshot_max_age_hours)
        report = maintenance.expire_snapshots(spark, cfg, name, cutoff, m.retain_last, now)
    elif action == "remove_orphan_files":
        cutoff = now - timedelta(hours=m.orphan_min_age_hours)
        allowed = {*m.allow_shared_location, *allow_shared}
        report = maintenance.remove_orphan_files(
            spark, cfg, name, cutoff, dry_run, now, allow_shared=allowed
        )
    else:
        raise UsageError(f"{action} has neither procedures nor a runner of its own")
    after = load_table(catalog, name)
    only: set[int] | None = None  # a manifest rewrite deletes nothing: check what it wrote
    if action == "rewrite_manifests":
        only = _check_manifests_rewrite(after, None if start is None else start.snapshot_id)
        verified["manifest_rewrites_checked"] = len(only)
    if action == "expire_snapshots":
        verified |= _check_expiry(before, after, int(cutoff.timestamp() * 1000), m.retain_last)
    missing = missing_files(after, only)
    if missing:
        raise OperationFailed(
            f"{action} on {name}: {len(missing)} referenced file(s) missing, e.g. {missing[0]}"
        )
    verified["referenced_files_present"] = True
    return {
        "table": name,
        "action": action,
        "dry_run": dry_run,
        "result": report.result,
        "verified": verified,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _run_calls(
    spark: Any, cfg: Config, catalog: Any, name: str, spec: ActionSpec, before: Any, dry_run: bool
) -> dict[str, Any]:
    """A registered action that is Iceberg procedures alone (``ActionSpec.calls``): each
    called in order on ``name``, then its own check of the table's facts before and after
    (``ActionSpec.verify``) and that the new metadata file exists. ``dry_run``: the calls
    it would make, none made."""
    assert spec.calls is not None
    started = time.perf_counter()
    facts = statistics_facts(before)
    if facts["snapshot"] is None:
        raise UsageError(f"{spec.name} on {name}: the table has no snapshot yet (no data)")
    calls = spec.calls(facts)
    result: dict[str, Any] = {"calls": [c.procedure for c in calls]}
    if not dry_run:
        for call in calls:
            args = "".join(f", {k} => {int(v)}" for k, v in call.args.items())
            result |= maintenance.call_procedure(spark, cfg, name, call.procedure, args).result
        after = load_table(catalog, name)
        problem = None if spec.verify is None else spec.verify(facts, statistics_facts(after))
        if problem is not None:
            raise OperationFailed(f"{spec.name} on {name}: {problem}")
        missing = missing_files(after, set())  # metadata only: its own file
        if missing:
            raise OperationFailed(f"{spec.name} on {name}: metadata file missing: {missing[0]}")
    return {
        "table": name,
        "action": spec.name,
        "dry_run": dry_run,
        "result": result,
        "verified": {} if dry_run else {"checked": True, "referenced_files_present": True},
        "seconds": round(time.perf_counter() - started, 3),
    }


def _run_own(
    spark: Any, cfg: Config, catalog: Any, name: str, action: str, before: Any, dry_run: bool
) -> dict[str, Any]:
    """A registered action run in Python (:data:`RUNNERS`), then that the table's metadata
    file exists (it commits metadata only)."""
    started = time.perf_counter()
    result, verified = RUNNERS[action](spark, cfg, catalog, name, before, dry_run)
    if not dry_run:
        missing = missing_files(load_table(catalog, name), set())
        if missing:
            raise OperationFailed(f"{action} on {name}: metadata file missing: {missing[0]}")
        verified = verified | {"referenced_files_present": True}
    return {
        "table": name,
        "action": action,
        "dry_run": dry_run,
        "result": result,
        "verified": verified,
        "seconds": round(time.perf_counter() - started, 3),
    }
