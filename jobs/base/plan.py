"""Planning an action from table metadata: which files of which partitions to rewrite.

PyIceberg metadata only: no data is read and no Spark is needed (``icefloe plan`` runs it
without a JVM). The partition scan gives each (spec, partition) its files; the core
(``icefloe.optimizer.plan_partition``) picks the minimum replacement: order-free FFD for merges,
Knuth-Plass over files ordered by the sort key's lower bounds for sorts. Groups are packed
and their outputs predicted by what the files take once merged: their rows at the bytes
per row the table's rewrites write (``icefloe.optimizer.output_model``; one figure per table,
from its snapshots' summaries or its files). Data files with
file-scoped position deletes are always rewritten (delete-file compaction), and files of
older partition specs are left alone. Delete compaction (``deletes``) also rewrites every
file of a partition whose delete files are not all scoped to one data file (equality
deletes, partition-scoped position deletes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from icefloe.base.catalog import load_table
from icefloe.base.config import Config, PlanInputs, TablePolicy
from icefloe.base.errors import UsageError
from icefloe.base.layoutspec import (
    LayoutSpec,
    decided_layout,
    declared_order,
    layout_spec,
    rewrite_action,
)
from icefloe.base.tablestats import (
    PartitionFiles,
    current_partitions,
    rewrite_outputs,
)
from icefloe.base.verdicts import files_verdict, rules_of
from icefloe.jobs.base.layout import Bounds, LayoutGroups, depth_text, key_order, layout_groups
from icefloe.jobs.base.selectors import parse_selectors, require_matches
from icefloe.optimizer import (
    Depth,
    FileBounds,
    plan_partition,
    predict_output_sizes,
    stats_from_sizes,
)
from icefloe.optimizer.actions import LAYOUT_ACTIONS
from icefloe.optimizer.output_model import BytesPerRow, bytes_per_row, group_bytes, merged_sizes
from icefloe.optimizer.verdict import MERGE, Rules, Verdict, merge_verdict

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table


Calibrate = Callable[["Table", Sequence[PartitionFiles], int], "BytesPerRow | None"]
"""Measures what a merged row takes when the table's rewrites do not say it yet (an
actor's ``icefloe.jobs.rewrite.calibrate.sampled_rate``; data is read, so never in ``plan``)."""


@dataclass(frozen=True)
class FileGroup:
    """Files of one (spec, partition) rewritten together (``icefloe.optimizer.output_count``
    files)."""

    partition: str
    spec_id: int
    paths: tuple[str, ...]
    bytes: int
    merged_bytes: int | None = None  # predicted bytes written (None: ``bytes``)

    @property
    def output_bytes(self) -> int:
        """The bytes the group is predicted to write (what its outputs are counted by)."""
        return self.bytes if self.merged_bytes is None else self.merged_bytes


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
    depth_before: Depth | None = None  # clustering depth (a table with a layout)
    depth_after: Depth | None = None  # predicted
    layout: bool = False  # the groups re-sort overlapping files (else they merge)
    files: tuple[FileBounds[str], ...] = ()  # each file's key bounds (a table with a layout)
    verdict: Verdict | None = None  # what the decider makes of it under the table's policy


@dataclass(frozen=True)
class TablePlan:
    snapshot_id: int | None
    partitions: list[PartitionPlan]
    bytes_per_row: BytesPerRow | None = None  # what merged rows take (None: their sizes)

    @property
    def work(self) -> bool:
        return any(p.groups for p in self.partitions)


def _referenced(table: Table, snapshot_id: int) -> dict[str, int]:
    """Data files named by file-scoped position deletes, with how many name each."""
    rows = table.inspect.files(snapshot_id=snapshot_id).to_pylist()
    referenced: dict[str, int] = {}
    for row in rows:
        if row["content"] == 1:
            lo = dict(row["lower_bounds"] or {}).get(_FILE_PATH_ID)
            hi = dict(row["upper_bounds"] or {}).get(_FILE_PATH_ID)
            if lo is not None and lo == hi:
                path = lo.decode("utf-8")
                referenced[path] = referenced.get(path, 0) + 1
    return referenced


_FILE_PATH_ID = 2147483546  # the reserved field id of a position delete's file_path


def _plan_partition(
    pf: Any,
    target: int,
    tolerance: int,
    action: str,
    forced: dict[str, int],
    bounds: dict[str, Bounds],
    deletes: bool = False,
    min_input_files: int = 2,
    layout: LayoutSpec | None = None,
    rate: BytesPerRow | None = None,
) -> PartitionPlan:
    order = (
        key_order(pf.paths, bounds, layout) if layout is not None else list(range(len(pf.paths)))
    )
    paths = tuple(pf.paths[i] for i in order)
    sizes = tuple(pf.sizes[i] for i in order)
    merged = tuple(merged_sizes(sizes, [pf.records[i] for i in order], rate))
    stats = stats_from_sizes(sizes, target)
    must = [i for i, p in enumerate(paths) if p in forced]
    if deletes and pf.delete_files > sum(forced.get(p, 0) for p in paths):
        must = list(range(len(paths)))  # deletes not scoped to one file: rewrite them all
    relayout = None if layout is None else layout_groups(paths, sizes, bounds, layout, target)
    if relayout is not None and relayout.groups and not must:
        at = {p: i for i, p in enumerate(paths)}
        groups = [[at[p] for p in g] for g in relayout.groups]
        return _partition_plan(
            pf, paths, sizes, stats.mse, target, groups, "", relayout, True, merged
        )
    reason = ""
    groups = []
    rules = Rules(True, frozenset({MERGE}), target, tolerance, min_input_files)
    gate = merge_verdict(rules, stats)  # the one rule (``icefloe.optimizer.verdict``), ad hoc
    enough = stats.small_files >= min_input_files or stats.fills_target(target)
    if gate.action is None and not (stats.needs_work(tolerance) and enough) and not must:
        reason = gate.reason  # else the plan itself says whether a group lowers it
    else:
        ordered = layout is not None
        weights = None if rate is None else merged  # no rate: the planner's size-only path
        plan = plan_partition(sizes, target, tolerance, preserve_order=ordered, merged=weights)
        groups = [list(g) for g in plan.groups]
        grouped = {i for g in groups for i in g}
        extra: list[int] = [i for i in must if i not in grouped]
        if extra:  # delete-file compaction: one group of the remaining files
            groups.append(extra)
        if not groups:
            reason = "no group lowers the partition's entropy"
    if reason and relayout is not None and layout is not None:
        reason += f"; depth {depth_text(relayout.before)} <= {layout.tolerance:g}"
    return _partition_plan(
        pf, paths, sizes, stats.mse, target, groups, reason, relayout, False, merged
    )


def _partition_plan(
    pf: Any,
    paths: tuple[str, ...],
    sizes: tuple[int, ...],
    mse: float,
    target: int,
    groups: list[list[int]],
    reason: str,
    relayout: LayoutGroups | None,
    resort: bool,
    merged: tuple[int, ...],
) -> PartitionPlan:
    """The plan of one partition's ``groups`` (indexes into ``paths``), with its predicted
    file sizes after (a group's outputs from its files' ``merged`` bytes); ``resort``: the
    groups are ``relayout``'s re-sort (else merges)."""
    replaced = {i for g in groups for i in g}
    after = [s for i, s in enumerate(sizes) if i not in replaced]
    written = [group_bytes([sizes[i] for i in g], [merged[i] for i in g]) for g in groups]
    for w in written:
        after += predict_output_sizes(w, target)
    predicted = stats_from_sizes(after, target)
    return PartitionPlan(
        key=pf.key,
        spec_id=pf.spec_id,
        paths=paths,
        sizes=sizes,
        delete_files=pf.delete_files,
        mse_before=mse,
        predicted_mse_after=predicted.mse,
        predicted_files_after=predicted.n,
        groups=tuple(
            FileGroup(pf.key, pf.spec_id, tuple(paths[i] for i in g), sum(sizes[i] for i in g), w)
            for g, w in zip(groups, written, strict=True)
        ),
        reason=reason,
        depth_before=None if relayout is None else relayout.before,
        depth_after=None if relayout is None else relayout.after if resort else relayout.before,
        layout=resort,
        files=() if relayout is None else relayout.files,
    )


def plan_table(
    table: Table,
    target: int,
    tolerance: int,
    action: str = "merge",
    selectors: list[str] | None = None,
    layout: LayoutSpec | None = None,
    only: set[str] | None = None,
    deletes: bool = False,
    min_input_files: int = 2,
    calibrate: Calibrate | None = None,
) -> TablePlan:
    """Plan every (selected) partition from the current snapshot's file list. ``deletes``
    (delete compaction): also every data file a delete file may apply to, so that no delete
    file is left applying to the partition. A partition with fewer than ``min_input_files``
    small files (under 0.75·T) is left for later (delete compaction aside). ``layout`` (a sort or a
    z-order): partitions deeper than its tolerance are re-sorted (``icefloe.jobs.base.layout``)."""
    wanted = parse_selectors(table, selectors)
    snapshot = table.current_snapshot()
    if snapshot is None:
        return TablePlan(None, [])
    files = current_partitions(table, snapshot.snapshot_id, layout)
    rate = table_bytes_per_row(table, files, target)  # from every partition: one per table
    require_matches(table, wanted, files)
    files = [pf for pf in files if not wanted or any(pf.partition.matches(w) for w in wanted)]
    files = [pf for pf in files if only is None or pf.key in only]
    forced = (
        _referenced(table, snapshot.snapshot_id) if any(pf.delete_files for pf in files) else {}
    )
    current_spec = table.spec().spec_id
    if calibrate is not None and (rate is None or rate.source != "rewrites"):
        current = [pf for pf in files if pf.spec_id == current_spec]
        rate = calibrate(table, current, target) or rate
    bounds = {path: b for pf in files for path, b in zip(pf.paths, pf.bounds, strict=False)}
    plans = []
    for pf in files:
        p = _plan_partition(
            pf, target, tolerance, action, forced, bounds, deletes, min_input_files, layout, rate
        )
        if pf.spec_id != current_spec:
            p = replace(
                p,
                groups=(),
                predicted_mse_after=p.mse_before,
                predicted_files_after=len(p.paths),
                layout=False,
                reason=f"written with older partition spec {pf.spec_id} "
                f"(current {current_spec}): left as is",
            )
        plans.append(p)
    return TablePlan(snapshot.snapshot_id, plans, rate)


def table_bytes_per_row(
    table: Table, files: Sequence[PartitionFiles], target: int
) -> BytesPerRow | None:
    """What a merged row of ``table`` takes (:func:`icefloe.optimizer.output_model.bytes_per_row`):
    from its recent rewrites' snapshot summaries, else from ``files``."""
    sizes = [s for pf in files for s in pf.sizes]
    records = [r for pf in files for r in pf.records]
    return bytes_per_row(rewrite_outputs(table), sizes, records, target)


@dataclass(frozen=True)
class Planned:
    """A table loaded and planned under its policy: what ``plan`` shows and ``optimize``
    (ad hoc or an actor's) rewrites. ``action``: the rewrite that runs (delete compaction
    runs the table's merge or sort, with ``deletes``)."""

    table: Table
    policy: TablePolicy
    action: str
    deletes: bool
    tolerance: int
    min_input_files: int
    layout: LayoutSpec | None  # sort and zorder: the order the rows are written in
    plan: TablePlan

    @property
    def sort_columns(self) -> tuple[str, ...]:
        return self.layout.columns if self.layout is not None and not self.layout.zorder else ()

    @property
    def zorder_columns(self) -> tuple[str, ...]:
        return self.layout.columns if self.layout is not None and self.layout.zorder else ()

    @property
    def target(self) -> int:
        return self.policy.target


def data_action(action: str, policy: TablePolicy, table: Table) -> str:
    """The rewrite an action runs: delete compaction runs the table's merge (a sort or a
    z-order when its layout has one: ``rewrite_action``)."""
    if action != "compact_deletes":
        return action
    return rewrite_action(policy, declared_order(table))


def load_and_plan(
    cfg: Config,
    catalog: Catalog,
    name: str,
    action: str = "merge",
    partitions: list[str] | None = None,
    tolerance: int | None = None,
    min_input_files: int | None = None,
    keys: Sequence[str] | None = None,
    calibrate: Calibrate | None = None,
) -> Planned:
    """Table ``name`` loaded and planned from its current snapshot under its policy (the
    target, tolerance and ``min_input_files`` of :meth:`Config.plan_inputs`). ``tolerance``
    overrides the policy's (its ``min_input_files`` then 2); ``min_input_files`` overrides
    both; ``keys``: exactly these partitions; ``partitions``: ``COL=VALUE`` selectors."""
    table = load_table(catalog, name)
    inputs = cfg.plan_inputs(name, table.properties, tolerance, min_input_files)
    policy, tol, min_files = inputs.policy, inputs.tolerance, inputs.min_input_files
    deletes, runs = action == "compact_deletes", data_action(action, policy, table)
    layout = layout_spec(table, policy, runs) if runs in LAYOUT_ACTIONS else None
    only = None if keys is None else set(keys)
    plan = plan_table(
        table, inputs.target, tol, runs, partitions, layout, only, deletes, min_files, calibrate
    )
    verdicts = policy_verdicts(table, cfg.plan_inputs(name, table.properties), plan.snapshot_id)
    with_verdicts = [replace(p, verdict=verdicts.get((p.spec_id, p.key))) for p in plan.partitions]
    plan = replace(plan, partitions=with_verdicts)
    return Planned(table, policy, runs, deletes, tol, min_files, layout, plan)


def policy_verdicts(
    table: Table, inputs: PlanInputs, snapshot_id: int | None
) -> dict[tuple[int, str], Verdict]:
    """Each (spec, partition)'s verdict under the table's own policy (``icefloe.optimizer.verdict``,
    what the decider would do, whatever ``plan`` was asked to run); one read of the
    manifests, with the bounds of the layout the decider keeps."""
    if snapshot_id is None:
        return {}
    try:
        decided = decided_layout(table, inputs.policy)
    except UsageError:  # the policy's columns do not fit: the decider keeps no layout either
        decided = None
    rules = rules_of(inputs, decided)
    return {
        (pf.spec_id, pf.key): files_verdict(rules, pf, decided)[1]
        for pf in current_partitions(table, snapshot_id, decided)
    }
