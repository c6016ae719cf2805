"""A table's layout: the columns its files are clustered by, and each file's key bounds.

:class:`LayoutSpec` says how a table is laid out (``sort``: by its declared write order,
else the policy's ``sort_order``, compared lexicographically; ``zorder``: by the policy's
``zorder`` columns, interleaved) and turns one data file's manifest metrics (column
bounds, null and NaN counts, keyed by field id, as manifests and ``inspect.files`` give
them) into the key interval ``icefloe.optimizer.layout`` measures clustering depth on. No data is
read.

Bounds, sort: one value per column, decoded from Iceberg's single-value serialization
(dates as days, timestamps as microseconds: comparable within a column). A column with
nulls has no lower bound (nulls sort first), one with NaNs no upper bound, a column
without metrics neither: the interval then reaches past every key on that side.

Bounds, z-order: the file's box, one value per column, each the column's order-keeping
unsigned integer (``icefloe.optimizer.zorder.ordered_value``: ``a <= b`` gives
``ordered(a) <= ordered(b)``), so every type compares alike; a missing bound is None
(unbounded). Its depth is measured column by column (``icefloe.optimizer.zlayout``).

:meth:`LayoutSpec.depth` and :meth:`LayoutSpec.plan` are the one place that picks the
measure and the planner of a layout; the decider, the actors, ``plan``, ``tables`` and
``status`` all go through them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.base.config import TablePolicy
from icefloe.base.errors import UsageError
from icefloe.base.sortorder import SortField, ascending, declared_fields
from icefloe.optimizer import ordered_value
from icefloe.optimizer.actions import LAYOUT_ACTIONS
from icefloe.optimizer.layout import Depth, FileBounds, K, clustering_depth
from icefloe.optimizer.layoutplan import LayoutPlan, plan_layout
from icefloe.optimizer.verdict import SORT, ZORDER
from icefloe.optimizer.verdict import rewrite_action as verdict_rewrite
from icefloe.optimizer.zlayout import key_ordered, plan_zorder, zorder_depth

if TYPE_CHECKING:
    from pyiceberg.table import Table

# the Iceberg types z-order maps (ZOrderByteUtils); decimals and nested types it does not
_ZORDER_TYPES = (
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "date",
    "timestamp",
    "timestamptz",
    "timestamp_ns",
    "timestamptz_ns",
    "string",
    "binary",
    "uuid",
)

Bound = tuple[object, ...]


@dataclass(frozen=True)
class LayoutSpec:
    """How a table's partitions are clustered: ``action`` (sort or zorder) over ``columns``
    (their field ids and Iceberg types beside), with the policy's ``tolerance`` (mean
    clustering depth). A sort's rows are written in ``order``
    (:mod:`icefloe.base.sortorder`: each field's direction, null order and transform; by
    default the columns ascending, nulls first), and its files carry ``sort_order_id``
    when that is the table's declared order."""

    action: str
    columns: tuple[str, ...]
    field_ids: tuple[int, ...]
    types: tuple[Any, ...]
    tolerance: float
    order: tuple[SortField, ...] = ()
    sort_order_id: int | None = None

    @property
    def zorder(self) -> bool:
        return self.action == ZORDER

    @property
    def fields(self) -> tuple[SortField, ...]:
        """The row order of a sort (empty for a z-order)."""
        if self.zorder:
            return ()
        return self.order or ascending(self.columns)

    def bounds(
        self,
        lower: Mapping[int, bytes] | Iterable[tuple[int, bytes]] | None,
        upper: Mapping[int, bytes] | Iterable[tuple[int, bytes]] | None,
        nulls: Mapping[int, int] | Iterable[tuple[int, int]] | None = None,
        nans: Mapping[int, int] | Iterable[tuple[int, int]] | None = None,
    ) -> tuple[Bound | None, Bound | None]:
        """One file's key interval from its metrics (mappings or ``(field id, value)``
        pairs, as ``inspect.files`` rows hold them)."""
        # pyiceberg: decoding bounds is needed only where metadata is read
        from pyiceberg.conversions import from_bytes

        lo_raw, hi_raw = dict(lower or {}), dict(upper or {})
        null_counts, nan_counts = dict(nulls or {}), dict(nans or {})
        low_nulls = {f.column: f.nulls_low for f in self.fields}  # NULLS FIRST ascending …
        los: list[object] = []
        his: list[object] = []
        for col, fid, kind in zip(self.columns, self.field_ids, self.types, strict=True):
            lo, hi = lo_raw.get(fid), hi_raw.get(fid)
            low = low_nulls.get(col, True)  # … or NULLS LAST descending: nulls below
            nulls_here = bool(null_counts.get(fid))
            los.append(None if lo is None or (nulls_here and low) else from_bytes(kind, lo))
            unbounded = nan_counts.get(fid) or (nulls_here and not low)
            his.append(None if hi is None or unbounded else from_bytes(kind, hi))
        if not self.zorder:
            return tuple(los), tuple(his)
        return (
            tuple(None if v is None else ordered_value(v) for v in los),
            tuple(None if v is None else ordered_value(v) for v in his),
        )

    def depth(self, files: Sequence[FileBounds[K]]) -> Depth:
        """The partition's clustering depth in this layout's measure: a sort's by its key
        intervals (``icefloe.optimizer.layout``), a z-order's by its boxes
        (``icefloe.optimizer.zlayout``)."""
        if self.zorder:
            return zorder_depth(files, len(self.columns))
        return clustering_depth(files)

    @property
    def corner_columns(self) -> int:
        """The columns of a z-order's boxes (``icefloe.optimizer.zlayout``); 0 for a sort."""
        return len(self.columns) if self.zorder else 0

    def plan(self, files: Sequence[FileBounds[K]], target: int) -> LayoutPlan[K]:
        """The least rewrite that brings the partition's depth within the tolerance."""
        if self.zorder:
            return plan_zorder(files, self.tolerance, target, len(self.columns))
        return plan_layout(files, self.tolerance, target)


def rewrite_action(policy: TablePolicy, declared: tuple[str, ...] = ()) -> str:
    """The rewrite a partition's small files get under ``policy`` on a table whose declared
    write order is ``declared`` (:func:`icefloe.optimizer.verdict.rewrite_action`)."""
    return verdict_rewrite(policy.actions, bool(policy.zorder), bool(declared or policy.sort_order))


def key_sizes(files: Sequence[FileBounds[str]], zorder: int = 0) -> list[int]:
    """The sizes of a partition's ``files`` in key order (``icefloe.optimizer.zlayout.key_ordered``;
    ``zorder``: the z-order's columns, 0 for a sort), the order in which a table with a
    layout merges them: only neighbours merge, so the layout is kept."""
    return [files[i].size for i in key_ordered(files, zorder)]


def declared_order(table: Table) -> tuple[str, ...]:
    """The columns a layout measures of the table's declared write order: its fields whose
    transform keeps the column's order (:attr:`SortField.by_column`), in order."""
    return _measured(declared_fields(table))


def sort_fields(table: Table, policy_sort: tuple[str, ...]) -> tuple[SortField, ...]:
    """The table's declared write order (every field, :func:`declared_fields`) when it has
    one a layout can measure, else the policy's ``sort_order`` ascending; UsageError when
    neither names a top-level column."""
    fields = declared_fields(table) if declared_order(table) else ascending(policy_sort)
    if not fields:
        raise UsageError(
            f"sort needs a sort order: {_name(table)} has none and the policy's sort_order is empty"
        )
    _checked(table, tuple(f.column for f in fields), "sort")
    return fields


def sort_columns(table: Table, policy_sort: tuple[str, ...]) -> tuple[str, ...]:
    """The columns a sort layout measures (:func:`sort_fields`' order-keeping ones)."""
    return _measured(sort_fields(table, policy_sort))


def layout_spec(table: Table, policy: TablePolicy, action: str) -> LayoutSpec:
    """The layout ``action`` (sort or zorder) keeps on ``table`` under ``policy``."""
    order: tuple[SortField, ...] = ()
    order_id = None
    if action == ZORDER:
        if len(policy.zorder) < 2:
            raise UsageError(
                f"zorder needs two or more columns: the policy of {_name(table)} names "
                f"{len(policy.zorder)} in zorder"
            )
        cols = _checked(table, tuple(policy.zorder), "z-order")
    elif action == SORT:
        order = sort_fields(table, tuple(policy.sort_order))
        cols = _measured(order)
        order_id = table.sort_order().order_id if declared_order(table) else None
    else:
        raise UsageError(f"{action!r} is not a layout action (known: {', '.join(LAYOUT_ACTIONS)})")
    schema = table.schema()
    fields = [schema.find_field(c) for c in cols]
    if action == ZORDER:
        for f in fields:
            if str(f.field_type).split("(")[0] not in _ZORDER_TYPES:
                raise UsageError(
                    f"z-order column {f.name!r} of {_name(table)} is {f.field_type}: "
                    f"z-order takes {', '.join(_ZORDER_TYPES)}"
                )
    ids, types = tuple(f.field_id for f in fields), tuple(f.field_type for f in fields)
    return LayoutSpec(action, cols, ids, types, policy.clustering_tolerance, order, order_id)


def _measured(order: tuple[SortField, ...]) -> tuple[str, ...]:
    """The columns a sort's clustering is measured on: its order-keeping fields'."""
    return tuple(dict.fromkeys(f.column for f in order if f.by_column))


def decided_layout(table: Table, policy: TablePolicy) -> LayoutSpec | None:
    """The layout the decider keeps on ``table``: z-order when the policy's actions name
    it, else a sort when they name sort and the table (or the policy) has a sort order;
    None otherwise (or when the policy is disabled)."""
    if not policy.enabled:
        return None
    if ZORDER in policy.actions:
        return layout_spec(table, policy, ZORDER)
    if SORT in policy.actions:
        try:
            return layout_spec(table, policy, SORT)
        except UsageError:
            return None
    return None


def _checked(table: Table, cols: tuple[str, ...], what: str) -> tuple[str, ...]:
    known = {f.name for f in table.schema().fields}
    for col in cols:
        if col not in known:
            raise UsageError(f"{what} column {col!r} is not a top-level column of {_name(table)}")
    return cols


def _name(table: Table) -> str:
    return ".".join(table.name()[-2:])
