"""A table's metadata maintenance as an actor's action: run it, then prove nothing was lost.

Every action runs the same way: its runner (:data:`Runner`: what the registry's
``ActionSpec`` names, ``calls`` for the generic :func:`procedure_calls`, else its
``runner``) gets a :class:`TableRun` and returns what it did and verified
(:class:`Ran`); then every file the snapshots it names reference must exist.

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

import importlib
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from itertools import islice
from typing import Any, cast

from icefloe.base.catalog import load_catalog, load_table
from icefloe.base.config import Config
from icefloe.base.config.maintenance_policy import MaintenancePolicy
from icefloe.base.errors import OperationFailed, UsageError
from icefloe.base.tablestats import ancestry
from icefloe.jobs.maintenance import procedures as maintenance
from icefloe.optimizer.actions import BY_NAME, TABLE_ACTIONS, ActionSpec
from icefloe.state.health import statistics_facts


@dataclass(frozen=True)
class TableRun:
    """One run of a table action: what its runner gets."""

    spec: ActionSpec
    spark: Any
    cfg: Config
    catalog: Any
    name: str
    before: Any  # the table as loaded before the run
    now: datetime
    dry_run: bool = False
    allow_shared: Collection[str] = ()  # beside the policy's maintenance.allow_shared_location

    @cached_property
    def maintenance(self) -> MaintenancePolicy:
        """The table's ``maintenance`` policy (its properties included)."""
        return self.cfg.policy_for(self.name, self.before.properties).maintenance


@dataclass(frozen=True)
class Ran:
    """What a runner did (``result``, the procedure's figures) and verified. ``snapshots``:
    whose referenced files must exist after it (None: every retained snapshot's; empty: the
    table's metadata file only); ``checked`` False: it changed nothing (a dry run).
    ``after``: the table as the runner loaded it after its work, if it did (not read again)."""

    result: dict[str, Any]
    verified: dict[str, Any] = field(default_factory=dict)
    snapshots: frozenset[int] | None = frozenset()
    checked: bool = True
    after: Any = None


Runner = Callable[[TableRun], Ran]
"""A table action's runner; a failed check raises ``OperationFailed``."""


def runner_of(spec: ActionSpec) -> Runner:
    """The runner of a table action: :func:`procedure_calls` for one of Iceberg procedures
    alone, else the ``"module:function"`` its spec names."""
    if spec.calls is not None:
        return procedure_calls
    module, _, function = spec.runner.partition(":")
    if not module or not function:
        raise UsageError(f"{spec.name} has neither procedures nor a runner of its own")
    return cast(Runner, getattr(importlib.import_module(module), function))


def live_files(table: Any, snapshot_id: int) -> dict[str, tuple[int, int]]:
    """path → (content kind, record count) of the live entries of one snapshot."""
    snap = table.metadata.snapshot_by_id(snapshot_id)
    out: dict[str, tuple[int, int]] = {}
    for manifest in snap.manifests(table.io) if snap is not None else []:
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            f = entry.data_file
            out[f.file_path] = (int(f.content), int(f.record_count))
    return out


def missing_files(table: Any, snapshot_ids: Collection[int] | None = None) -> list[str]:
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


def check_manifests_rewrite(table: Any, start: int | None) -> set[int]:
    """Verify each manifest rewrite committed on the current history since ``start``; the
    snapshots checked."""
    checked = set()
    for node in ancestry(table):
        if node.snapshot_id == start:
            break
        props = node.summary.additional_properties if node.summary is not None else {}
        parent = node.parent_snapshot_id
        if "manifests-replaced" in props and parent is not None:
            if live_files(table, node.snapshot_id) != live_files(table, parent):
                raise OperationFailed(
                    f"rewrite_manifests snapshot {node.snapshot_id} does not hold exactly "
                    "its parent's files"
                )
            checked.add(node.snapshot_id)
    return checked


def must_retain(table: Any, cutoff_ms: int, retain_last: int) -> set[int]:
    """Snapshots expiry must keep: younger than the cutoff, the newest ``retain_last``
    ancestors of the current snapshot, and every branch's or tag's snapshot."""
    keep = {s.snapshot_id for s in table.metadata.snapshots if s.timestamp_ms >= cutoff_ms}
    keep |= {s.snapshot_id for s in islice(ancestry(table), retain_last)}
    keep |= {ref.snapshot_id for ref in table.metadata.refs.values()}
    return keep


def check_expiry(before: Any, after: Any, cutoff_ms: int, retain_last: int) -> dict[str, int]:
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
    spec = BY_NAME[action]
    runner = runner_of(spec)  # a spec naming no runner fails before any work
    catalog = load_catalog(cfg)
    before = load_table(catalog, name)
    started = time.perf_counter()
    at = now or datetime.now(UTC)
    ran = runner(TableRun(spec, spark, cfg, catalog, name, before, at, dry_run, allow_shared))
    verified = dict(ran.verified)
    if ran.checked:
        after = ran.after if ran.after is not None else load_table(catalog, name)
        missing = missing_files(after, ran.snapshots)
        if missing:
            raise OperationFailed(
                f"{action} on {name}: {len(missing)} referenced file(s) missing, e.g. {missing[0]}"
            )
        verified["referenced_files_present"] = True
    return {
        "table": name,
        "action": action,
        "dry_run": dry_run,
        "result": ran.result,
        "verified": verified,
        "seconds": round(time.perf_counter() - started, 3),
    }


def procedure_calls(run: TableRun) -> Ran:
    """A registered action that is Iceberg procedures alone (``ActionSpec.calls``): each
    called in order on the table, then its own check of the table's facts before and after
    (``ActionSpec.verify``). A dry run: the calls it would make, none made."""
    spec = run.spec
    assert spec.calls is not None
    facts = statistics_facts(run.before)
    if facts["snapshot"] is None:
        raise UsageError(f"{spec.name} on {run.name}: the table has no snapshot yet (no data)")
    calls = spec.calls(facts)
    result: dict[str, Any] = {"calls": [c.procedure for c in calls]}
    if run.dry_run:
        return Ran(result, checked=False)
    for call in calls:
        args = "".join(f", {k} => {int(v)}" for k, v in call.args.items())
        result |= maintenance.call_procedure(
            run.spark, run.cfg, run.name, call.procedure, args
        ).result
    after = load_table(run.catalog, run.name)
    problem = None if spec.verify is None else spec.verify(facts, statistics_facts(after))
    if problem is not None:
        raise OperationFailed(f"{spec.name} on {run.name}: {problem}")
    return Ran(result, {"checked": True}, after=after)
