"""One verdict per partition: what to do with it now, and why. The one place a partition's
decision is made.

The decider (its queue items), ``plan``, ``status``, ``tables`` and the dashboard all call
:func:`partition_verdict`; none of them re-derives a decision. It takes what is known of one
partition -- its entropy stats (:class:`~icefloe.optimizer.entropy.PartitionStats`: kept rolling by
the decider, or from a scan), its files' sizes in key order and its layout plan when the
table keeps a layout -- and the table's :class:`Rules` (its policy, resolved), and returns a
:class:`Verdict`: the action to queue now (or None), whether it waits for more small files,
the reason, the queue cost and benefit, and the entropy or depth predicted after.

The order of the rules, first match wins (the actors plan in the same order):

1. a disabled table, or a policy that neither rewrites nor compacts: nothing;
2. ``compact_deletes`` when the policy enables it and the partition's delete files delete
   ``delete_ratio`` of its rows or more (its small files are merged in the same rewrite);
3. the table's layout (``sort`` or ``zorder``) when its mean clustering depth is over
   ``clustering_tolerance`` and the least rewrite lowers it
   (:func:`icefloe.optimizer.layout.lowers_depth`) -- unless only icefloe's own rewrites changed the
   partition since it was decided (*settled*: re-planning the same rows would churn);
4. the rewrite of its small files (:func:`rewrite_action`: a ``zorder`` or ``sort`` where
   the table keeps that layout, else ``merge``) when its MSE is over tolerance² and a merge
   lowers it (:func:`icefloe.optimizer.entropy.merge_need`), once it holds ``min_input_files`` small
   files (or small files filling a target file); with fewer it *waits*. A table with a
   layout merges neighbours in key order only: there, a merge is due only where the ordered
   plan finds a run (``key_sizes``).

Pure: no I/O, no clocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icefloe.optimizer.entropy import PartitionStats, merge_estimate, merge_need
from icefloe.optimizer.layout import Depth, lowers_depth
from icefloe.optimizer.planner import plan_partition

MERGE, SORT, ZORDER, COMPACT_DELETES = "merge", "sort", "zorder", "compact_deletes"

ACT, WAIT, NONE = "act", "wait", "none"


@dataclass(frozen=True)
class Rules:
    """What a table's resolved policy says about its partitions."""

    enabled: bool
    actions: frozenset[str]
    target: int  # bytes per output file
    tolerance: int  # bytes: MSE under tolerance² is left alone
    min_input_files: int  # small files a partition waits for
    max_wait_hours: float = 1.0
    delete_ratio: float = 0.1  # compact_deletes: share of rows deleted
    clustering_tolerance: float = 1.25  # mean depth a laid-out partition may reach
    zorder: bool = False  # the policy names z-order columns
    sorted: bool = False  # the table declares a write order, or the policy a sort_order

    @property
    def rewrite(self) -> str:
        """The rewrite a partition's small files get (:func:`rewrite_action`)."""
        return rewrite_action(self.actions, self.zorder, self.sorted)


def rewrite_action(actions: frozenset[str] | Sequence[str], zorder: bool, sort: bool) -> str:
    """``zorder`` when the policy z-orders (and names its columns), ``sort`` when it sorts
    and there is an order (the table's declared one or the policy's ``sort_order``: a merge
    in key order keeps the layout), else ``merge``."""
    if ZORDER in actions and zorder:
        return ZORDER
    return SORT if SORT in actions and sort else MERGE


@dataclass(frozen=True)
class Layout:
    """A laid-out partition's clustering and its least re-sort (``LayoutSpec.plan``):
    the layout's action (sort or zorder), depth before and predicted after, and the bytes
    the plan rewrites (0: no plan). ``settled``: only icefloe's own rewrites changed it
    since it was last decided."""

    action: str
    before: Depth
    after: Depth
    bytes_rewritten: int
    settled: bool = False


@dataclass(frozen=True)
class Verdict:
    """What to do with one partition now. ``action`` None: nothing now (``waiting``: a
    merge would help once ``min_input_files`` small files are there, or the wait is over).
    ``cost``/``benefit``: the queue item's bytes and value. ``mse_after``/``depth_after``:
    predicted (None where the action does not aim at it)."""

    action: str | None
    reason: str
    waiting: bool = False
    cost: int = 0
    benefit: float = 0.0
    mse_after: float | None = None
    depth_after: float | None = None
    min_input_files: int | None = None  # the floor a merge was decided at

    @property
    def state(self) -> str:
        """``act``, ``wait`` or ``none``: what ``status``, ``tables`` and the dashboard show."""
        return ACT if self.action is not None else WAIT if self.waiting else NONE

    def to_dict(self) -> dict[str, object]:
        return {"state": self.state, "action": self.action, "reason": self.reason}


NOTHING = Verdict(None, "table not enabled")


def partition_verdict(
    rules: Rules,
    stats: PartitionStats,
    key_sizes: Sequence[int] | None = None,
    layout: Layout | None = None,
    floor: int | None = None,
) -> Verdict:
    """The verdict on one partition (the rules in the module's order). ``key_sizes``: its
    data files' sizes in key order (a table with a layout merges neighbours only; None: no
    layout, or not known). ``layout``: its clustering (None: no layout, or not measured).
    ``floor``: the small files a merge waits for (default ``min_input_files``; 2 once a
    partition has waited ``max_wait_hours``)."""
    if not rules.enabled:
        return NOTHING
    if COMPACT_DELETES in rules.actions:
        due = deletes_verdict(stats, rules.delete_ratio)
        if due is not None:
            return due
    if layout is not None:
        relayout = layout_verdict(rules, layout)
        if relayout.action is not None:
            return relayout
    merge = merge_verdict(rules, stats, key_sizes, floor)
    if merge.action is None and layout is not None and not merge.waiting:
        return Verdict(None, f"{merge.reason}; {layout_verdict(rules, layout).reason}")
    return merge


def deletes_verdict(stats: PartitionStats, delete_ratio: float) -> Verdict | None:
    """``compact_deletes`` when the partition's delete files delete ``delete_ratio`` of its
    data rows or more (its data files and their deletes rewritten: cost its bytes)."""
    if stats.delete_files == 0 or stats.delete_ratio < delete_ratio:
        return None
    reason = (
        f"{stats.delete_files} delete files delete {stats.delete_ratio:.1%} of "
        f"{stats.data_rows} rows"
    )
    return Verdict(COMPACT_DELETES, reason, cost=stats.total_bytes, benefit=stats.deleted_rows)


def layout_verdict(rules: Rules, layout: Layout) -> Verdict:
    """The layout's action when the partition is clustered deeper than the tolerance and
    its least re-sort lowers the depth enough (:func:`~icefloe.optimizer.layout.lowers_depth`);
    benefit: the depth removed times its files."""
    before, after, tol = layout.before, layout.after, rules.clustering_tolerance
    depth = f"depth {before.mean:.3g}"
    if not rules.enabled:
        return NOTHING
    if layout.action not in rules.actions:
        return Verdict(None, f"{layout.action} not in the policy's actions")
    if before.mean <= tol:
        return Verdict(None, f"{depth} <= {tol:g}")
    if layout.settled:
        return Verdict(None, f"{depth}: only icefloe's own rewrites changed it (settled)")
    if layout.bytes_rewritten <= 0 or not lowers_depth(before.mean, after.mean, tol):
        return Verdict(None, f"{depth} > {tol:g}, but no re-sort lowers it")
    return Verdict(
        layout.action,
        f"depth {before.mean:.3g} > {tol:g} (max {before.max}) over {before.files} files",
        cost=layout.bytes_rewritten,
        benefit=(before.mean - after.mean) * before.files,
        depth_after=after.mean,
    )


def merge_verdict(
    rules: Rules,
    stats: PartitionStats,
    key_sizes: Sequence[int] | None = None,
    floor: int | None = None,
) -> Verdict:
    """The rewrite of the partition's small files (:func:`~icefloe.optimizer.entropy.merge_need`),
    in key order where ``key_sizes`` are given."""
    action = rules.rewrite
    if action not in rules.actions:
        return Verdict(None, "the policy rewrites no small files")
    floor = rules.min_input_files if floor is None else floor
    need = merge_need(stats, rules.target, rules.tolerance, floor)
    few = f"{stats.small_files} small file(s), fewer than min_input_files ({floor})"
    if need is None:
        if not stats.needs_work(rules.tolerance):
            return Verdict(None, f"MSE {stats.mse:.4g} < tolerance² ({rules.tolerance}²)")
        if stats.small_files < floor and not stats.fills_target(rules.target):
            return Verdict(None, few)  # and no merge of them would lower the MSE anyway
        return Verdict(None, f"no merge of its {stats.small_files} small file(s) lowers the MSE")
    if need == "wait":
        reason = f"{few}: waits up to {rules.max_wait_hours:g} h"
        return Verdict(None, reason, waiting=True, min_input_files=floor)
    if key_sizes is not None and not merges_in_order(key_sizes, rules.target, rules.tolerance):
        return Verdict(None, "no run of neighbours in key order merges")
    cost, benefit = merge_estimate(stats, rules.target)
    reason = f"mse {stats.mse:.4g} >= tolerance² over {stats.n} files"
    if stats.small_files < rules.min_input_files:
        reason += (
            f", {stats.small_files} small holding a target file"
            if stats.fills_target(rules.target)
            else f", {stats.small_files} small after {rules.max_wait_hours:g} h"
        )
    return Verdict(
        action,
        reason,
        cost=cost,
        benefit=benefit,
        mse_after=max(0.0, stats.mse - benefit),
        min_input_files=floor,
    )


def merges_in_order(sizes: Sequence[int], target: int, tolerance: int) -> bool:
    """Whether the plan of a partition whose ``sizes`` are in key order merges any run of
    neighbours (``plan_partition``, ``preserve_order``)."""
    return bool(plan_partition(sizes, target, tolerance, preserve_order=True).groups)
