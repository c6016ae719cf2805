"""A table's policy as the pure verdict's :class:`~icefloe.optimizer.verdict.Rules`, and a laid-out
partition's clustering as its :class:`~icefloe.optimizer.verdict.Layout`: what the decider,
``plan``, ``status``, ``tables`` and the dashboard pass to
:func:`icefloe.optimizer.verdict.partition_verdict`, built the same way for each."""

from __future__ import annotations

from collections.abc import Sequence

from icefloe.base.config import PlanInputs
from icefloe.base.layoutspec import LayoutSpec, key_sizes
from icefloe.base.tablestats import PartitionFiles
from icefloe.optimizer import PartitionStats
from icefloe.optimizer.layout import FileBounds
from icefloe.optimizer.verdict import SORT, Layout, Rules, Verdict, partition_verdict


def rules_of(inputs: PlanInputs, layout: LayoutSpec | None = None) -> Rules:
    """The verdict's rules of a table planned with ``inputs`` whose kept ``layout`` is
    ``layout`` (a sort layout: the table has an order even when the policy names none)."""
    policy = inputs.policy
    return Rules(
        enabled=policy.enabled,
        actions=frozenset(policy.actions),
        target=inputs.target,
        tolerance=inputs.tolerance,
        min_input_files=inputs.min_input_files,
        max_wait_hours=policy.max_wait_hours,
        delete_ratio=policy.maintenance.delete_ratio,
        clustering_tolerance=policy.clustering_tolerance,
        zorder=bool(policy.zorder),
        sorted=bool(policy.sort_order) or (layout is not None and layout.action == SORT),
    )


def layout_of(
    spec: LayoutSpec, files: Sequence[FileBounds[str]], target: int, settled: bool = False
) -> Layout:
    """One partition's clustering under ``spec`` and its least re-sort (``spec.plan``);
    a settled partition is measured only (no plan: re-planning it would churn)."""
    if settled:
        depth = spec.depth(files)
        return Layout(spec.action, depth, depth, 0, settled=True)
    plan = spec.plan(files, target)
    rewritten = 0 if plan.is_empty else plan.bytes_rewritten
    return Layout(spec.action, plan.before, plan.after, rewritten)


def files_verdict(
    rules: Rules, pf: PartitionFiles, layout: LayoutSpec | None = None
) -> tuple[PartitionStats, Verdict]:
    """One partition's stats and verdict from its current files (``tables``, ``plan``, the
    dashboard); ``layout``: the table's kept layout, its files read with their bounds."""
    stats = pf.stats(rules.target)
    if layout is None:
        return stats, partition_verdict(rules, stats)
    files = pf.file_bounds()
    sizes = key_sizes(files, layout.corner_columns)
    return stats, partition_verdict(rules, stats, sizes, layout_of(layout, files, rules.target))
