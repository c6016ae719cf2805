"""The actors' logic: plan from metadata, rewrite exactly the plan, commit, report.

``plan_table`` needs PyIceberg only (``icefloe plan`` runs it without Spark);
``optimize_table`` is what the decider's actor loop and ``icefloe optimize`` call.

Choices, and why:

* **One commit for the action, per partition on a conflict.** Every partition's groups
  go into one ``replace`` snapshot (one metadata write, as Iceberg's own procedure does).
  If that commit fails validation, the partitions are committed one by one, each still in
  one snapshot, so a conflict costs only the partitions it touched a re-plan.
* **Everything written and verified before the first commit.** Checksums are per group;
  the Great Expectations suite runs once over all written data, at the same time as the
  checksum pass. A failure of either deletes every new file and commits nothing.
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
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from jobs.rewrite import FileGroup
from service.catalog import load_catalog, load_table, spark_table_name
from service.config import Config, parse_table_identifier
from service.errors import OperationFailed, UsageError
from service.tablestats import split_selector

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

    from jobs.rewrite import ExactRewrite, GroupResult

ACTIONS = ("merge", "sort")
MAX_ATTEMPTS = 3


# ---------------------------------------------------------------------------- planning
# PyIceberg metadata only: no data is read, no Spark is needed.


@dataclass(frozen=True)
class PartitionPlan:
    """One (spec, partition): its files in plan order and the groups to rewrite."""

    key: str
    spec_id: int
    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    delete_files: int
    mse_before: float
    predicted_mse_after: float
    predicted_files_after: int
    groups: tuple[FileGroup, ...]
    reason: str  # why nothing is planned ('' when groups)


@dataclass(frozen=True)
class TablePlan:
    snapshot_id: int | None
    partitions: list[PartitionPlan]

    @property
    def work(self) -> bool:
        return any(p.groups for p in self.partitions)


def partition_fields(table: Table) -> dict[str, str]:
    """Selector column -> partition field of the current spec (field and source names)."""
    schema = table.schema()
    names: dict[str, str] = {}
    for f in table.spec().fields:
        names.setdefault(schema.find_column_name(f.source_id) or f.name, f.name)
    for f in table.spec().fields:
        names[f.name] = f.name
    return names


def parse_selectors(table: Table, selectors: list[str] | None) -> list[list[str]]:
    """``["day=2026-11-01/region=eu", ...]`` -> per selector, the key parts it requires."""
    if not selectors:
        return []
    fields = partition_fields(table)
    if not fields:
        raise UsageError(f"table {_name(table)} is unpartitioned: --partition does not apply")
    out = []
    for selector in selectors:
        parts = []
        for col, value in split_selector(str(selector)):
            if not col:
                raise UsageError(f"bad partition {selector!r}: expected COLUMN=VALUE")
            if col not in fields:
                raise UsageError(
                    f"column {col!r} is not a partition field of {_name(table)}'s current spec "
                    f"(fields: {', '.join(sorted(fields))})"
                )
            parts.append(f"{fields[col]}={value}")
        out.append(parts)
    return out


def _matches(key: str, parts: list[str]) -> bool:
    return all(f"/{part}/" in f"/{key}/" for part in parts)


def resolve_sort_columns(table: Table, policy_sort: tuple[str, ...]) -> tuple[str, ...]:
    """The table's sort order (identity fields), else the policy's ``sort_order``."""
    schema = table.schema()
    cols = tuple(
        schema.find_column_name(f.source_id) or ""
        for f in table.sort_order().fields
        if str(f.transform) == "identity"
    ) or tuple(policy_sort)
    if not cols:
        raise UsageError(
            f"sort needs a sort order: {_name(table)} has none and the policy's sort_order is empty"
        )
    known = {f.name for f in schema.fields}
    for col in cols:
        if col not in known:
            raise UsageError(f"sort column {col!r} is not a top-level column of {_name(table)}")
    return cols


def _name(table: Table) -> str:
    return ".".join(table.name()[-2:])


def _file_details(
    table: Table, snapshot_id: int, sort_col: str | None
) -> tuple[set[str], dict[str, Any]]:
    """Data files named by file-scoped position deletes; lower bounds of ``sort_col``."""
    rows = table.inspect.files(snapshot_id=snapshot_id).to_pylist()
    referenced: set[str] = set()
    bounds: dict[str, Any] = {}
    for row in rows:
        if row["content"] == 1:
            lo = dict(row["lower_bounds"] or {}).get(_FILE_PATH_ID)
            hi = dict(row["upper_bounds"] or {}).get(_FILE_PATH_ID)
            if lo is not None and lo == hi:
                referenced.add(lo.decode("utf-8"))
        elif row["content"] == 0 and sort_col:
            metrics = (row.get("readable_metrics") or {}).get(sort_col) or {}
            bounds[row["file_path"]] = metrics.get("lower_bound")
    return referenced, bounds


_FILE_PATH_ID = 2147483546  # the reserved field id of a position delete's file_path


def _plan_partition(pf: Any, target: int, tolerance: int, action: str,
                    forced: set[str], bounds: dict[str, Any]) -> PartitionPlan:
    from optimizer import plan_partition, predict_output_sizes, stats_from_sizes

    order = list(range(len(pf.paths)))
    if action == "sort":
        order.sort(key=lambda i: (bounds.get(pf.paths[i]) is None,
                                  str(bounds.get(pf.paths[i])), pf.paths[i]))
    paths = tuple(pf.paths[i] for i in order)
    sizes = tuple(pf.sizes[i] for i in order)
    stats = stats_from_sizes(sizes, target)
    must = [i for i, p in enumerate(paths) if p in forced]
    reason = ""
    groups: list[list[int]] = []
    if not stats.needs_work(tolerance) and not must:
        reason = f"MSE {stats.mse:.4g} < tolerance² ({tolerance}²)"
    else:
        plan = plan_partition(sizes, target, tolerance, preserve_order=action == "sort")
        groups = [list(g) for g in plan.groups]
        grouped = {i for g in groups for i in g}
        extra: list[int] = [i for i in must if i not in grouped]
        if extra:  # delete-file compaction: one rolling group of the remaining files
            groups.append(extra)
        if not groups:
            reason = "no group lowers the partition's entropy"
    replaced = {i for g in groups for i in g}
    after = [s for i, s in enumerate(sizes) if i not in replaced]
    for g in groups:
        after += predict_output_sizes(sum(sizes[i] for i in g), target)
    predicted = stats_from_sizes(after, target)
    return PartitionPlan(
        key=pf.key, spec_id=pf.spec_id, paths=paths, sizes=sizes,
        delete_files=pf.delete_files, mse_before=stats.mse,
        predicted_mse_after=predicted.mse, predicted_files_after=predicted.n,
        groups=tuple(
            FileGroup(pf.key, pf.spec_id, tuple(paths[i] for i in g), sum(sizes[i] for i in g))
            for g in groups
        ),
        reason=reason,
    )


def plan_table(
    table: Table,
    target: int,
    tolerance: int,
    action: str = "merge",
    selectors: list[str] | None = None,
    sort_columns: tuple[str, ...] = (),
    only: set[str] | None = None,
) -> TablePlan:
    """Plan every (selected) partition from the current snapshot's file list."""
    from service.tablestats import current_partitions

    wanted = parse_selectors(table, selectors)
    snapshot = table.current_snapshot()
    if snapshot is None:
        return TablePlan(None, [])
    files = current_partitions(table, snapshot.snapshot_id)
    for parts in wanted:
        if not any(_matches(pf.key, parts) for pf in files):
            raise UsageError(
                f"no partition of {_name(table)} matches {'/'.join(parts)!r} "
                f"(try `icefloe plan {_name(table)}`)"
            )
    files = [pf for pf in files if not wanted or any(_matches(pf.key, w) for w in wanted)]
    files = [pf for pf in files if only is None or pf.key in only]
    needs_details = action == "sort" or any(pf.delete_files for pf in files)
    forced, bounds = (
        _file_details(table, snapshot.snapshot_id, sort_columns[0] if sort_columns else None)
        if needs_details else (set(), {})
    )
    current_spec = table.spec().spec_id
    plans = []
    for pf in files:
        p = _plan_partition(pf, target, tolerance, action, forced, bounds)
        if pf.spec_id != current_spec:
            p = replace(p, groups=(), predicted_mse_after=p.mse_before,
                        predicted_files_after=len(p.paths),
                        reason=f"written with older partition spec {pf.spec_id} "
                               f"(current {current_spec}): left as is")
        plans.append(p)
    return TablePlan(snapshot.snapshot_id, plans)


@dataclass(frozen=True)
class PartitionReport:
    """What happened to one partition. MSEs in bytes²; ``prediction_error`` = actual -
    predicted MSE after."""

    key: str
    spec_id: int
    status: str  # planned | rewritten | skipped | failed
    reason: str
    files: int
    bytes: int
    delete_files: int
    mse_before: float
    predicted_mse_after: float
    actual_mse_after: float | None = None
    prediction_error: float | None = None
    groups: int = 0
    files_rewritten: int = 0
    bytes_rewritten: int = 0
    files_added: int = 0
    bytes_added: int = 0
    delete_files_removed: int = 0
    rows: int = 0
    snapshot_id: int | None = None
    attempts: int = 0

    @classmethod
    def from_plan(cls, p: PartitionPlan, dry_run: bool) -> PartitionReport:
        return cls(
            key=p.key, spec_id=p.spec_id,
            status=("planned" if dry_run else "pending") if p.groups else "skipped",
            reason=p.reason, files=len(p.paths), bytes=sum(p.sizes),
            delete_files=p.delete_files, mse_before=p.mse_before,
            predicted_mse_after=p.predicted_mse_after, groups=len(p.groups),
            files_rewritten=sum(len(g.paths) for g in p.groups),
            bytes_rewritten=sum(g.bytes for g in p.groups),
        )


@dataclass(frozen=True)
class OptimizeReport:
    """The result of one ``optimize_table`` call; ``to_dict()`` is its JSON form."""

    table: str
    action: str
    dry_run: bool
    target_file_size_bytes: int
    tolerance_bytes: int
    start_snapshot_id: int | None
    partitions_scanned: int
    partitions_skipped: int
    partitions_rewritten: int
    partitions_failed: int
    files_rewritten: int
    bytes_rewritten: int
    files_added: int
    bytes_added: int
    delete_files_removed: int
    rows_verified: int
    snapshot_ids: tuple[int, ...]
    prediction_error: float | None  # mean |actual - predicted| MSE, over target²
    expectations: dict[str, Any] | None
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    partitions: tuple[PartitionReport, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _build(base: dict[str, Any], parts: list[PartitionReport], suite: Any, secs: float,
           target: int, timings: dict[str, float]) -> OptimizeReport:
    done = [p for p in parts if p.status == "rewritten"]
    counted = done if not base["dry_run"] else [p for p in parts if p.status == "planned"]
    errors = [abs(p.prediction_error) for p in done if p.prediction_error is not None]
    return OptimizeReport(
        **base,
        partitions_scanned=len(parts),
        partitions_skipped=sum(p.status == "skipped" for p in parts),
        partitions_rewritten=len(done),
        partitions_failed=sum(p.status == "failed" for p in parts),
        files_rewritten=sum(p.files_rewritten for p in counted),
        bytes_rewritten=sum(p.bytes_rewritten for p in counted),
        files_added=sum(p.files_added for p in done),
        bytes_added=sum(p.bytes_added for p in done),
        delete_files_removed=sum(p.delete_files_removed for p in done),
        rows_verified=sum(p.rows for p in done),
        snapshot_ids=tuple(dict.fromkeys(p.snapshot_id for p in done
                                         if p.snapshot_id is not None)),
        prediction_error=(sum(errors) / len(errors) / target**2) if errors else None,
        expectations=suite,
        seconds=round(secs, 3),
        timings={k: round(v, 3) for k, v in timings.items()},
        partitions=tuple(parts),
    )


def optimize_table(
    spark: SparkSession,
    cfg: Config,
    table: str,
    partitions: list[str] | None = None,
    action: str = "merge",
    dry_run: bool = False,
    tolerance: int | None = None,
) -> OptimizeReport:
    """Merge (or sort) the small files of ``table``'s partitions that need it.

    ``partitions``: selectors such as ``"day=2026-11-01"`` or ``"day=2026-11-01/region=eu"``
    over the current spec's fields; None = all. ``tolerance``: bytes, None = the table's
    policy. Raises UsageError / TableNotFound before anything is written, OperationFailed
    when a write, the verification or the data checks fail (new files deleted, nothing
    committed). Partitions whose commit keeps conflicting are reported ``failed``; the
    others are committed, each in its own ``replace`` snapshot.
    """
    started = time.monotonic()
    if action not in ACTIONS:
        raise UsageError(f"unknown action {action!r} (known: {', '.join(ACTIONS)})")
    if tolerance is not None and tolerance < 0:
        raise UsageError(f"tolerance must be >= 0 bytes, got {tolerance}")
    parse_table_identifier(table)
    catalog = load_catalog(cfg)
    pt = load_table(catalog, table)
    policy = cfg.policy_for(table, pt.properties)
    target = int(policy.target_file_size_bytes or 1)
    tol = policy.tolerance_bytes if tolerance is None else tolerance
    sort_columns = resolve_sort_columns(pt, policy.sort_order) if action == "sort" else ()
    plan = plan_table(pt, target, tol, action, partitions, sort_columns)
    timings = {"plan": time.monotonic() - started}
    reports = {(p.spec_id, p.key): PartitionReport.from_plan(p, dry_run) for p in plan.partitions}
    base = dict(table=table, action=action, dry_run=dry_run, target_file_size_bytes=target,
                tolerance_bytes=tol, start_snapshot_id=plan.snapshot_id)
    suite: dict[str, Any] | None = None
    attempt = 0
    while plan.work and not dry_run:
        attempt += 1
        conflicts, suite_now = _attempt(spark, spark_table_name(cfg, table), plan, target,
                                        sort_columns, reports, attempt, suite is None,
                                        timings)
        suite = suite or suite_now
        if not conflicts:
            break
        if attempt == MAX_ATTEMPTS:
            for key in conflicts:
                reports[key] = replace(reports[key], status="failed", attempts=attempt,
                                       reason=f"commit conflicted {attempt} times")
            break
        # Re-plan the conflicting partitions from a fresh scan of the table.
        fresh = plan_table(load_table(catalog, table), target, tol, action, partitions,
                           sort_columns, only={k[1] for k in conflicts})
        by_key = {(p.spec_id, p.key): p for p in fresh.partitions}
        for key in conflicts:
            p = by_key.get(key)
            if p is None or not p.groups:
                reason = p.reason if p is not None else "partition is gone"
                reports[key] = replace(reports[key], status="skipped", attempts=attempt,
                                       reason=f"re-planned after a conflict: {reason}")
        plan = TablePlan(fresh.snapshot_id, [by_key[k] for k in conflicts
                                             if k in by_key and by_key[k].groups])
    parts = [replace(r, status="failed", reason="not committed") if r.status == "pending"
             else r for r in reports.values()]
    return _build(base, parts, suite, time.monotonic() - started, target, timings)


def worth_committing(sizes_before: Sequence[int], sse_after: int, target: int) -> bool:
    """Never waste a rewrite: commit only files that lower the partition's SSE.

    The planner predicts the output; a writer that rolls early (its size estimate is taken
    before compression) can still write files no better than their inputs, and committing
    those would churn the table forever (the decider would see the same entropy again).
    """
    from optimizer import stats_from_sizes

    return sse_after < stats_from_sizes(sizes_before, target).sse


def _attempt(
    spark: SparkSession,
    name: str,
    plan: TablePlan,
    target: int,
    sort_columns: tuple[str, ...],
    reports: dict[tuple[int, str], PartitionReport],
    attempt: int,
    run_suite: bool,
    timings: dict[str, float],
) -> tuple[list[tuple[int, str]], dict[str, Any] | None]:
    """Write and verify every planned group, then commit partition by partition."""
    from jobs.rewrite import CommitConflict, ExactRewrite

    assert plan.snapshot_id is not None
    clock = time.monotonic()
    rewrite = ExactRewrite(spark, name, plan.snapshot_id)
    conflicts: list[tuple[int, str]] = []
    suite: dict[str, Any] | None = None
    try:
        work = [p for p in plan.partitions if p.groups]
        paths = [path for p in work for g in p.groups for path in g.paths]
        rewrite.load_tasks(paths)
        rewrite.check_files_exist(paths)
        timings["setup"] = timings.get("setup", 0.0) + time.monotonic() - clock
        results = rewrite.run(
            [g for p in work for g in p.groups], target, sort_columns,
            also_check=(lambda written: _suite(spark, rewrite, written)) if run_suite else None,
        )
        suite = rewrite.check_result
        by_partition: dict[tuple[int, str], list[GroupResult]] = {}
        for r in results:
            by_partition.setdefault((r.group.spec_id, r.group.partition), []).append(r)
        untried = {(p.spec_id, p.key) for p in work}
        try:
            ready: list[_Ready] = []
            for p in work:
                done = _ready_to_commit(rewrite, p, by_partition.get((p.spec_id, p.key), []),
                                        target)
                if done is None:
                    untried.discard((p.spec_id, p.key))
                    reports[(p.spec_id, p.key)] = replace(
                        reports[(p.spec_id, p.key)], status="skipped", attempts=attempt,
                        reason="written files were no better than the inputs; nothing committed",
                    )
                else:
                    ready.append(done)
            if len(ready) > 1 and _commit_together(rewrite, ready, reports, attempt):
                untried.clear()
                ready = []
            for done in ready:  # one by one: a conflict then costs only its own partition
                untried.discard(done.key)
                try:
                    snapshot_id, _ = rewrite.commit(done.results)
                except CommitConflict:
                    conflicts.append(done.key)
                    continue
                reports[done.key] = done.report(reports[done.key], snapshot_id, attempt,
                                                rewrite)
        except BaseException:
            # a commit failed in a way that is not a conflict: the files written for the
            # partitions not yet committed will never be, so delete them now
            for key in untried:
                rewrite.discard(by_partition.get(key, []))
            raise
    finally:
        rewrite.close()
        for phase, secs in rewrite.timings.items():
            timings[phase] = timings.get(phase, 0.0) + secs
    return conflicts, suite


@dataclass(frozen=True)
class _Ready:
    """One partition's written groups that passed every check, waiting for its commit."""

    plan: PartitionPlan
    results: list[GroupResult]
    new_sizes: list[int]
    mse_after: float

    @property
    def key(self) -> tuple[int, str]:
        return (self.plan.spec_id, self.plan.key)

    def report(self, base: PartitionReport, snapshot_id: int, attempt: int,
               rewrite: ExactRewrite) -> PartitionReport:
        p = self.plan
        replaced = [path for g in p.groups for path in g.paths]
        return replace(
            base, status="rewritten", reason="", snapshot_id=snapshot_id,
            files_rewritten=len(replaced), bytes_rewritten=sum(g.bytes for g in p.groups),
            groups=len(p.groups), predicted_mse_after=p.predicted_mse_after,
            files_added=len(self.new_sizes), bytes_added=sum(self.new_sizes),
            delete_files_removed=len(rewrite.dangling_deletes(sorted(replaced))),
            rows=sum(r.input.rows for r in self.results), actual_mse_after=self.mse_after,
            prediction_error=self.mse_after - p.predicted_mse_after, attempts=attempt,
        )


def _ready_to_commit(
    rewrite: ExactRewrite, p: PartitionPlan, mine: list[GroupResult], target: int
) -> _Ready | None:
    """The partition's commit, or None (files deleted) when it would not lower its SSE."""
    from optimizer import stats_from_sizes

    new_sizes = [s for r in mine for s in r.new_sizes]
    replaced = {path for g in p.groups for path in g.paths}
    kept = [s for path, s in zip(p.paths, p.sizes, strict=True) if path not in replaced]
    after = stats_from_sizes(kept + new_sizes, target)
    if not worth_committing(p.sizes, after.sse, target) and not rewrite.dangling_deletes(
        sorted(replaced)
    ):
        rewrite.discard(mine)
        return None
    return _Ready(p, mine, new_sizes, after.mse)


def _commit_together(
    rewrite: ExactRewrite, ready: list[_Ready], reports: dict[tuple[int, str], PartitionReport],
    attempt: int,
) -> bool:
    """Every ready partition in one ``replace`` snapshot (the common case: one metadata
    write instead of one per partition). False on a conflict, with nothing deleted: the
    caller then commits partition by partition, so only the conflicting ones re-plan."""
    from jobs.rewrite import CommitConflict

    try:
        snapshot_id, _ = rewrite.commit([r for d in ready for r in d.results],
                                        discard_on_conflict=False)
    except CommitConflict:
        return False
    for done in ready:
        reports[done.key] = done.report(reports[done.key], snapshot_id, attempt, rewrite)
    return True


def _suite(
    spark: SparkSession, rewrite: ExactRewrite, results: list[GroupResult]
) -> dict[str, Any]:
    """Great Expectations over all written data, once per action, before any commit."""
    from jobs.verify import Checksum, conform, run_suite

    total = Checksum()
    for r in results:
        total = total + r.input
    paths = [p for r in results for p in r.new_paths]
    if not paths:
        return {"success": True, "expectations": 0, "failed": [], "rows_checked": 0}
    like = rewrite.read(results[0].group_id, results[0].group.bytes)
    written = conform(spark.read.format(rewrite.file_format).load(paths), like)
    result = run_suite(written, total.rows, total.null_free_columns())
    if not result.success:
        rewrite.discard(results)
        raise OperationFailed(
            f"data checks failed on the rewritten files of {rewrite.table_name}: "
            f"{'; '.join(result.failed)}; nothing committed"
        )
    return result.to_dict()
