"""Clustering depth of a sorted partition, and the least rewrite that brings it down.

For a table with a sort order, each data file's manifest entry carries lower and upper
bounds on the leading sort column(s); no data is read. A file covers the closed key
interval ``[lower, upper]``. Two files *overlap* when their intervals share a point
(touching bounds, ``upper_a == lower_b``, count: both files may hold that key).

Depth (Snowflake's "clustering depth", per file). The *point depth* ``d(p)`` is the
number of files whose interval contains the key ``p``. A file's depth is the largest
``d(p)`` over its own interval: how many files a query for its worst key must open. The
partition's ``Depth.mean`` is the average of the file depths, ``Depth.max`` the largest
(equal to the largest point depth). A sorted partition of non-overlapping files has
depth 1.0; ``N`` files sharing a common key have depth ``N``; an empty partition 0.

Keys: a bound is a tuple with one value per leading sort column, compared
lexicographically (a single column is a 1-tuple). A missing bound (``None``, e.g. the
column's metrics were not collected) spans everything on its side: a lower bound of
``None`` is below every key, an upper bound of ``None`` above every key. A ``None``
column inside a bound does the same from that column on. Bounds of a multi-column key
taken column by column (``(min a, min b)``) are valid lexicographic bounds, only wider.

Minimum replacement (``plan_layout``): rewrite the fewest bytes so that the partition's
predicted mean depth is at most ``tolerance`` (``Rewrite model`` in ``layoutplan``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

Bound = tuple[object, ...]
"""A key bound: one value per leading sort column (``None`` column = unbounded)."""

Point = tuple[tuple[object, ...], ...]
"""A bound encoded so that plain tuple comparison orders it, sentinels included."""

_BELOW: tuple[object, ...] = (0,)
_VALUE = 1
_ABOVE: tuple[object, ...] = (2,)


@dataclass(frozen=True, slots=True)
class FileBounds(Generic[K]):
    """One data file: its id (opaque, hashable), size in bytes and key bounds.

    ``lower``/``upper`` come from the manifest entry's column bounds on the sort key;
    ``None`` means unbounded on that side (see the module doc).
    """

    id: K
    size: int
    lower: Bound | None
    upper: Bound | None


@dataclass(frozen=True, slots=True)
class Depth:
    """Clustering depth of a set of files: ``mean`` and ``max`` of the file depths."""

    files: int
    mean: float
    max: int


def encode(bound: Bound | None, upper: bool) -> Point:
    """``bound`` as a comparable point; ``None`` (whole or per column) as a sentinel.

    Every column from the first missing one on takes the sentinel, so two bounds that
    are unbounded from the same column on compare equal there, whatever follows.
    """
    sentinel = _ABOVE if upper else _BELOW
    if bound is None:
        return (sentinel,)
    out: list[tuple[object, ...]] = []
    for value in bound:
        if value is None or (out and out[-1] is sentinel):
            out.append(sentinel)
        else:
            out.append((_VALUE, value))
    return tuple(out)


def encode_files(files: Sequence[FileBounds[K]]) -> tuple[list[Point], list[Point]]:
    """Encoded lower and upper points of ``files``, validated (size >= 0, lower <= upper)."""
    lows: list[Point] = []
    highs: list[Point] = []
    for f in files:
        if f.size < 0:
            raise ValueError(f"file {f.id!r}: size must be >= 0 bytes, got {f.size}")
        lo, hi = encode(f.lower, upper=False), encode(f.upper, upper=True)
        if hi < lo:
            raise ValueError(f"file {f.id!r}: lower bound {f.lower!r} > upper {f.upper!r}")
        lows.append(lo)
        highs.append(hi)
    return lows, highs


def max_depths(lows: Sequence[Point], highs: Sequence[Point]) -> list[int]:
    """Each interval's depth: the largest point depth within it. O(n log n).

    Sweep over the distinct endpoints in order: at endpoint ``x`` the point depth is the
    number of intervals started at or before ``x`` minus those ended before ``x``. Between
    two consecutive endpoints the depth is never higher than at the left one (an interval
    covering the gap covers its left end too), so endpoints are the only points that can
    hold a maximum. Each interval's depth is then a range maximum over the endpoints it
    spans, answered by a sparse table.
    """
    n = len(lows)
    if n == 0:
        return []
    points = sorted(set(lows) | set(highs))
    index = {p: k for k, p in enumerate(points)}
    starts = [0] * len(points)
    ends = [0] * len(points)
    for lo, hi in zip(lows, highs, strict=True):
        starts[index[lo]] += 1
        ends[index[hi]] += 1
    level: list[int] = []
    open_now = 0
    for k in range(len(points)):
        open_now += starts[k]
        level.append(open_now)
        open_now -= ends[k]
    table = [level]  # table[j][k] = max of level[k : k + 2**j]
    while 2 ** len(table) <= len(level):
        prev, half = table[-1], 2 ** (len(table) - 1)
        table.append([max(prev[k], prev[k + half]) for k in range(len(prev) - half)])
    out: list[int] = []
    for lo, hi in zip(lows, highs, strict=True):
        a, b = index[lo], index[hi] + 1
        j = (b - a).bit_length() - 1
        out.append(max(table[j][a], table[j][b - 2**j]))
    return out


def depth_of(depths: Sequence[int]) -> Depth:
    """``Depth`` from per-file depths (0 files: mean 0.0, max 0)."""
    if not depths:
        return Depth(files=0, mean=0.0, max=0)
    return Depth(files=len(depths), mean=sum(depths) / len(depths), max=max(depths))


def clustering_depth(files: Sequence[FileBounds[K]]) -> Depth:
    """Clustering depth of one partition's data files (module doc: the definition).

    ``mean`` = average over files of the deepest point (number of files whose closed
    interval contains it) within the file's own interval; ``max`` = the deepest point of
    the partition; 1.0 for sorted non-overlapping files, ``N`` when ``N`` files share a
    key, 0 for no files. O(n log n) in the number of files.
    """
    lows, highs = encode_files(files)
    return depth_of(max_depths(lows, highs))


MIN_DEPTH_GAIN = 0.1
"""The share of a partition's depth over its tolerance a layout rewrite must remove to be
worth a commit. Less is what different cuts of the same rows give (a z-order of skewed
values, whose boxes all span the common value, scores about the same however it is cut):
committing it would rewrite the partition on every pass and lower nothing."""


def lowers_depth(before: float, after: float, tolerance: float) -> bool:
    """Whether a layout rewrite taking the mean depth from ``before`` to ``after`` is worth
    it: lower, by :data:`MIN_DEPTH_GAIN` of the excess over ``tolerance`` at least (any
    decrease when ``before`` is within the tolerance: a re-sort a user asked for)."""
    excess = before - tolerance
    return after < before and (excess <= 0 or before - after >= MIN_DEPTH_GAIN * excess)
