"""Clustering of a z-ordered partition, and the files a re-z-order rewrites.

A z-order serves predicates on any of its columns, so a file is described by its *box*:
one ``[lower, upper]`` per z-order column (``FileBounds.lower``/``upper`` hold one value
per column, ``None`` unbounded; values are the columns' order-preserving unsigned ints,
``icefloe.optimizer.zorder.ordered_value``). A predicate on one column opens the files whose
interval on that column holds the value: that column's clustering depth
(``icefloe.optimizer.layout``: the deepest point within a file's interval).

Depth (``zorder_depth``). A file's depth is the mean over the ``d`` columns of its
per-column depth divided by that column's depth in an ideal z-order of the partition's
``n`` files (``ideal_depths``: the grid the z-order curve cuts the partition's hull into;
``n^((d-1)/d)`` for a hull equally wide in every column, so a value of one column meets one
slab of files). The partition's ``mean`` is the average file depth: 1.0 for an ideal
z-order (and for a single file), about ``n^(1/d)`` for files that all span a square hull,
below 1.0 only for layouts better than a z-order on every column. ``max`` is the most files
one value of one column meets (not divided). The depth of the interleaved keys of the
boxes' corners is no measure here: a z-order rewrite cannot shrink the corners' key span
of a file whose rows cross a quadrant, so that depth would not drop after a perfect
rewrite.

Which files (``plan_zorder``). When the mean is over the tolerance, the files whose
interleaved-key intervals (corners' keys) overlap another's are rewritten, one group per
chain-overlapping cluster (``icefloe.optimizer.layoutplan`` asked for depth 1 in key space, the
fewest bytes): files apart in key space hold rows no other file's key range reaches and
stay. The predicted depth after counts each group as one file spanning its hull (its
outputs tile the hull; where their boxes split is known once they are written), so the
actor checks the real depth from the written files' metrics before committing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from icefloe.optimizer.layout import (
    Bound,
    Depth,
    FileBounds,
    K,
    depth_of,
    encode,
    encode_files,
    lowers_depth,
    max_depths,
)
from icefloe.optimizer.layoutplan import LayoutPlan, plan_layout
from icefloe.optimizer.zorder import ZORDER_BITS, zorder_key

_ALL_ONES = (1 << ZORDER_BITS) - 1


def _column(files: Sequence[FileBounds[K]], c: int) -> list[FileBounds[K]]:
    return [
        FileBounds(
            f.id,
            f.size,
            None if f.lower is None else (f.lower[c],),
            None if f.upper is None else (f.upper[c],),
        )
        for f in files
    ]


def zorder_depth(files: Sequence[FileBounds[K]], columns: int) -> Depth:
    """The z-order clustering depth of one partition's files (module doc), ``columns``
    the number of z-order columns (each bound holds one value per column). O(d · n log n)."""
    if columns < 1:
        raise ValueError(f"a z-order has one column at least, got {columns}")
    n = len(files)
    if n == 0:
        return depth_of([])
    for f in files:
        for bound in (f.lower, f.upper):
            if bound is not None and len(bound) != columns:
                raise ValueError(f"file {f.id!r}: {bound!r} is not one value per column")
    per_column = [max_depths(*encode_files(_column(files, c))) for c in range(columns)]
    ideal = ideal_depths(files, columns)
    means = [sum(col[i] / ideal[c] for c, col in enumerate(per_column)) / columns for i in range(n)]
    return Depth(files=n, mean=sum(means) / n, max=max(max(col) for col in per_column))


def ideal_depths(files: Sequence[FileBounds[K]], columns: int) -> list[float]:
    """Each column's depth in an ideal z-order of ``files``' rows into as many files.

    A z-order key takes the columns' bits from the top, round-robin, among the columns that
    still vary there; ``n`` files split the key range at its top ``k = log2 n`` varying
    bits. Within the partition's hull a column varies over ``s_c = log2(extent + 1)`` bits
    (all of them when a bound is missing), so the top ``k`` varying bits are shared out by
    water-filling: ``k_c = max(0, s_c - L)`` with ``Σ k_c = k``. The ideal layout is then a
    grid of ``2^k_c`` slabs along each column, and a value of column ``c`` meets
    ``n / 2^k_c`` files. For a hull equally wide in every column that is ``n^((d-1)/d)``;
    for a column that barely varies, ``n`` (a z-order splits on the others first). No column
    splits finer than its own bits (``k_c <= s_c``): files beyond that share its values.
    """
    n = len(files)
    k = math.log2(n) if n else 0.0
    spans = []
    for c in range(columns):
        los = [None if f.lower is None else f.lower[c] for f in files]
        his = [None if f.upper is None else f.upper[c] for f in files]
        if None in los or None in his:
            spans.append(float(ZORDER_BITS))
        else:
            spans.append(math.log2(max(his) - min(los) + 1))  # type: ignore[type-var, operator]
    top = sorted(spans, reverse=True)
    level = 0.0
    for m in range(1, columns + 1):  # the m widest columns vary above the water level
        level = (sum(top[:m]) - k) / m
        if m == columns or level >= top[m]:
            break
    level = max(level, 0.0)  # more files than the values can split: each column saturates
    return [2 ** (k - max(0.0, s - level)) for s in spans]


def _ints(bound: tuple[object, ...] | None, missing: int, columns: int) -> list[int]:
    if bound is None:
        return [missing] * columns
    return [missing if v is None else int(v) for v in bound]  # type: ignore[call-overload]


def corner_keys(f: FileBounds[K], columns: int) -> FileBounds[K]:
    """The file as an interval of interleaved keys: its box's lower and upper corners."""
    low, high = _ints(f.lower, 0, columns), _ints(f.upper, _ALL_ONES, columns)
    return FileBounds(f.id, f.size, (zorder_key(low),), (zorder_key(high),))


def _hull(group: Sequence[FileBounds[K]], columns: int) -> FileBounds[K]:
    """One file spanning the group's boxes (unbounded where any of them is)."""
    lower: list[object] = []
    upper: list[object] = []
    for c in range(columns):
        los = [None if f.lower is None else f.lower[c] for f in group]
        his = [None if f.upper is None else f.upper[c] for f in group]
        lower.append(None if None in los else min(los))  # type: ignore[type-var]
        upper.append(None if None in his else max(his))  # type: ignore[type-var]
    return FileBounds(group[0].id, sum(f.size for f in group), tuple(lower), tuple(upper))


def plan_zorder(
    files: Sequence[FileBounds[K]], tolerance: float, target_size: int, columns: int
) -> LayoutPlan[K]:
    """The files to re-z-order when the partition's mean depth is over ``tolerance``
    (module doc): the clusters whose corners' key intervals overlap, each one group."""
    if tolerance < 1:
        raise ValueError(f"clustering tolerance must be >= 1, got {tolerance}")
    before = zorder_depth(files, columns)
    if before.mean <= tolerance:
        return LayoutPlan((), 0, 0, before, before)
    keyed = plan_layout([corner_keys(f, columns) for f in files], 1.0, target_size)
    if keyed.is_empty:
        return LayoutPlan((), 0, 0, before, before)
    by_id = {f.id: f for f in files}
    chosen = set(keyed.files)
    kept = [f for f in files if f.id not in chosen]
    hulls = [_hull([by_id[i] for i in g], columns) for g in keyed.groups]
    after = zorder_depth([*kept, *hulls], columns)
    if not lowers_depth(before.mean, after.mean, tolerance):  # fewer, wider files can score
        # worse, and cuts of skewed values the same: no plan then
        return LayoutPlan((), 0, 0, before, before)
    return LayoutPlan(
        groups=keyed.groups,
        bytes_rewritten=keyed.bytes_rewritten,
        output_files=keyed.output_files,
        before=before,
        after=after,
    )


def key_ordered(files: Sequence[FileBounds[str]], zorder: int = 0) -> list[int]:
    """Indexes of ``files`` in key order, the order in which a merge of neighbours takes
    them: by lower bound (unbounded first; with ``zorder`` columns, by the interleaved key
    of the lower corner of the file's box), then by id."""

    def lower(f: FileBounds[str]) -> Bound | None:
        return corner_keys(f, zorder).lower if zorder else f.lower

    return sorted(range(len(files)), key=lambda i: (encode(lower(files[i]), False), files[i].id))
