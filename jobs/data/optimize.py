"""The actors' logic: plan from metadata, rewrite exactly the plan, commit, report.

Planning is :mod:`icefloe.jobs.base.plan` (PyIceberg only), the report
:mod:`icefloe.jobs.base.report`; ``optimize_table`` is what the decider's actor loop and
``icefloe optimize`` call.

Choices, and why:

* **One commit for the action, per partition on a conflict.** Every partition's groups
  go into one ``replace`` snapshot (one metadata write, as Iceberg's own procedure does).
  If that commit fails validation, the partitions the table's changes since the start did
  not touch go in one snapshot again and the others one by one
  (:mod:`icefloe.jobs.data.committing`), so a conflict costs only the partitions it touched a
  re-plan.
* **Everything written and verified before the first commit.** Checksums are per group,
  from one pass over the new files (the Spark engine's one aggregation; the Arrow
  engine's read-back of each file as it writes it), which also counts each column's
  non-nulls; the Great Expectations suite then runs once per action on those measures
  (no Spark job of its own), its context built once per process, in the background
  while the first action writes. A failure of either deletes every new file and commits
  nothing.
* **Conflicts re-plan.** A partition whose commit fails validation (a concurrent delete
  touched a replaced file) is re-planned from a fresh scan and retried, at most
  ``MAX_ATTEMPTS`` times in all: the fresh scan may show that no work is left.
* **Older partition specs are skipped**, with a reason in the report. Moving their rows
  into the current spec re-partitions them, i.e. a full rewrite, not a minimum
  replacement: that is ``rewrite_data_files``' job.
* **Position deletes force a rewrite** (delete-file compaction): a data file with
  file-scoped position deletes is rewritten, deletes applied, even when its size is
  fine, and the delete files that referenced only replaced files leave in the same
  commit. Partition-scoped delete files are left alone: they cannot name the new files.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from icefloe.base.catalog import load_catalog, load_table, spark_table_name
from icefloe.base.config import ACTIONS, Config, parse_table_identifier
from icefloe.base.errors import OperationFailed, UsageError
from icefloe.base.layoutspec import LayoutSpec
from icefloe.jobs.base.plan import TablePlan, load_and_plan, plan_table
from icefloe.jobs.base.report import OptimizeReport, PartitionReport, build_report
from icefloe.jobs.base.verify import Checksum
from icefloe.jobs.base.verify import prepare as prepare_suite
from icefloe.jobs.data.committing import Ready, commit_ready, ready_to_commit
from icefloe.jobs.rewrite.arrow_engine import ArrowTable, slim_metadata
from icefloe.jobs.rewrite.calibrate import sampled_rate
from icefloe.jobs.rewrite.exact import ExactRewrite

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

    from icefloe.jobs.rewrite.arrow_engine import ArrowTable
    from icefloe.jobs.rewrite.exact import Collaborators, ExactRewrite, GroupResult

MAX_ATTEMPTS = 3


def optimize_table(
    spark: SparkSession,
    cfg: Config,
    table: str,
    partitions: list[str] | None = None,
    action: str = "merge",
    dry_run: bool = False,
    tolerance: int | None = None,
    collaborators: Collaborators | None = None,
    min_input_files: int | None = None,
    keys: Sequence[str] | None = None,
) -> OptimizeReport:
    """Merge (or sort) ``table``'s small files where needed (``compact_deletes``: and every
    data file a delete file applies to), in the ``partitions`` selected (None = all). Raises
    UsageError / TableNotFound before writing, OperationFailed when a write or a check fails
    (nothing committed); partitions whose commit keeps conflicting are reported ``failed``.
    ``tolerance``: bytes (None = the policy's, with its ``min_input_files``, else 2: also
    what the actors pass). ``keys``: exactly these partitions (encoded ``PartitionKey``s,
    as queue items carry them); ``partitions`` are a person's ``COL=VALUE`` selectors."""
    started = time.monotonic()
    _check_arguments(table, action, tolerance)
    catalog = load_catalog(cfg)
    calibrate = None if dry_run else sampled_rate  # a dry run reads metadata only
    planned = load_and_plan(
        cfg, catalog, table, action, partitions, tolerance, min_input_files, keys, calibrate
    )
    plan, target = planned.plan, planned.target
    timings = {"plan": time.monotonic() - started}
    if plan.work and not dry_run:
        prepare_suite()  # GE's import and context, on a thread, while this action writes
    reports = {(p.spec_id, p.key): PartitionReport.from_plan(p, dry_run) for p in plan.partitions}
    base = {"table": table, "action": planned.action, "dry_run": dry_run}
    base |= {"tolerance_bytes": planned.tolerance, "target_file_size_bytes": target}
    base |= {"start_snapshot_id": plan.snapshot_id}
    if plan.bytes_per_row is not None:
        base |= {"bytes_per_row": round(plan.bytes_per_row.value, 3)}
        base |= {"bytes_per_row_source": plan.bytes_per_row.source}
    suite: dict[str, Any] | None = None
    attempt = 0
    while plan.work and not dry_run:
        attempt += 1
        conflicts, suite_now = _attempt(
            spark,
            spark_table_name(cfg, table),
            plan,
            target,
            planned.layout,
            reports,
            attempt,
            suite is None,
            timings,
            _arrow_table(planned.table, planned.policy.engine),
            collaborators,
        )
        suite = suite or suite_now
        if not conflicts:
            break
        if attempt == MAX_ATTEMPTS:
            _mark(reports, conflicts, "failed", attempt, f"commit conflicted {attempt} times")
            break
        # Re-plan the conflicting partitions from a fresh scan of the table.
        fresh = plan_table(
            load_table(catalog, table),
            target,
            planned.tolerance,
            planned.action,
            partitions,
            planned.layout,
            only={k[1] for k in conflicts},
            deletes=planned.deletes,
            min_input_files=planned.min_input_files,
            calibrate=lambda *_: planned.plan.bytes_per_row,  # the first plan's, not a new sample
        )
        plan = _replanned(fresh, conflicts, reports, attempt)
    parts = [
        replace(r, status="failed", reason="not committed") if r.status == "pending" else r
        for r in reports.values()
    ]
    return build_report(base, parts, suite, time.monotonic() - started, target, timings)


def _replanned(
    fresh: TablePlan,
    conflicts: list[tuple[int, str]],
    reports: dict[tuple[int, str], PartitionReport],
    attempt: int,
) -> TablePlan:
    """The plan of the conflicting partitions that still have work after a fresh scan; the
    others are reported skipped, with the fresh plan's reason."""
    by_key = {(p.spec_id, p.key): p for p in fresh.partitions}
    for key in conflicts:
        p = by_key.get(key)
        if p is None or not p.groups:
            reason = p.reason if p is not None else "partition is gone"
            _mark(reports, [key], "skipped", attempt, f"re-planned after a conflict: {reason}")
    return TablePlan(
        fresh.snapshot_id, [by_key[k] for k in conflicts if k in by_key and by_key[k].groups]
    )


def _check_arguments(table: str, action: str, tolerance: int | None) -> None:
    """UsageError before anything is read or written."""
    if action not in (*ACTIONS, "compact_deletes"):
        raise UsageError(f"unknown action {action!r} (known: {', '.join(ACTIONS)})")
    if tolerance is not None and tolerance < 0:
        raise UsageError(f"tolerance must be >= 0 bytes, got {tolerance}")
    parse_table_identifier(table)


def _mark(
    reports: dict[tuple[int, str], PartitionReport],
    keys: list[tuple[int, str]],
    status: str,
    attempt: int,
    reason: str,
) -> None:
    for key in keys:
        reports[key] = replace(reports[key], status=status, attempts=attempt, reason=reason)


def _arrow_table(pt: Table, engine: str) -> ArrowTable | None:
    """What the Arrow engine's tasks need of the table; None when the policy says Spark."""
    if engine != "auto":
        return None

    return ArrowTable(slim_metadata(pt.metadata), dict(pt.io.properties))


def _attempt(
    spark: SparkSession,
    name: str,
    plan: TablePlan,
    target: int,
    layout: LayoutSpec | None,
    reports: dict[tuple[int, str], PartitionReport],
    attempt: int,
    run_suite: bool,
    timings: dict[str, float],
    arrow: ArrowTable | None = None,
    collaborators: Collaborators | None = None,
) -> tuple[list[tuple[int, str]], dict[str, Any] | None]:
    """Write and verify every planned group, then commit them: all in one snapshot, or
    partition by partition after a conflict. Returns the conflicting partitions."""
    assert plan.snapshot_id is not None
    clock = time.monotonic()
    rewrite = ExactRewrite(spark, name, plan.snapshot_id, collaborators)
    conflicts: list[tuple[int, str]] = []
    suite: dict[str, Any] | None = None
    try:
        work = [p for p in plan.partitions if p.groups]
        paths = [path for p in work for g in p.groups for path in g.paths]
        rewrite.load_tasks(paths)  # a missing file is looked for only if a read fails
        timings["setup"] = timings.get("setup", 0.0) + time.monotonic() - clock
        zorder = layout is not None and layout.zorder
        results = rewrite.run(
            [g for p in work for g in p.groups],
            target,
            layout.fields if layout is not None else (),
            also_check=(lambda written: _suite(rewrite, written)) if run_suite else None,
            arrow=arrow,
            zorder_columns=layout.columns if layout is not None and zorder else (),
            sort_order_id=None if layout is None else layout.sort_order_id,
        )
        suite = rewrite.check_result
        by_partition: dict[tuple[int, str], list[GroupResult]] = {}
        for r in results:
            by_partition.setdefault((r.group.spec_id, r.group.partition), []).append(r)
        untried = {(p.spec_id, p.key) for p in work}
        try:
            ready: list[Ready] = []
            for p in work:
                mine = by_partition.get((p.spec_id, p.key), [])
                done = ready_to_commit(rewrite, p, mine, target, layout)
                if isinstance(done, str):
                    why = done
                    untried.discard((p.spec_id, p.key))
                    reports[(p.spec_id, p.key)] = replace(
                        reports[(p.spec_id, p.key)],
                        status="skipped",
                        attempts=attempt,
                        reason=f"written files were no better than the inputs ({why}); "
                        "nothing committed",
                    )
                else:
                    ready.append(done)
            conflicts = commit_ready(rewrite, ready, untried, reports, attempt)
        except BaseException:
            # a commit failed in a way that is not a conflict: the files written for the
            # partitions never handed to a commit will never be committed: delete them now
            for key in untried:
                rewrite.discard(by_partition.get(key, []))
            raise
    finally:
        rewrite.close()
        for phase, secs in rewrite.timings.items():
            timings[phase] = timings.get(phase, 0.0) + secs
    return conflicts, suite


def _suite(rewrite: ExactRewrite, results: list[GroupResult]) -> dict[str, Any]:
    """Great Expectations over the measures of all written data (``GroupResult.output``:
    rows and non-null counts per column), once per action, before any commit."""
    if not any(r.new_paths for r in results):
        return {"success": True, "expectations": 0, "failed": [], "rows_checked": 0}
    read, written = Checksum(), Checksum()
    for r in results:
        read, written = read + r.input, written + r.output
    result = rewrite.collaborators.run_suite(written, read.rows, read.null_free_columns())
    if not result.success:
        rewrite.discard(results)
        raise OperationFailed(
            f"data checks failed on the rewritten files of {rewrite.table_name}: "
            f"{'; '.join(result.failed)}; nothing committed"
        )
    return result.to_dict()
