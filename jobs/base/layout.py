"""The layout side of planning a sort or z-order: files' key bounds and the least re-sort.

A partition of a table with a layout (``icefloe.base.layoutspec``) has a clustering depth
(``icefloe.optimizer.layout``) read from its files' manifest bounds. When its mean depth is over
the policy's ``clustering_tolerance``, :func:`layout_groups` picks the minimum replacement
(``icefloe.optimizer.plan_layout``): groups of overlapping files, each rewritten as sorted,
non-overlapping files. Otherwise the action plans like a merge, over the files in key
order (Knuth-Plass keeps them sorted), so merging small neighbours keeps the layout.

The commit checks the depth for real (:func:`depth_after`): the kept files' bounds with
the new files' bounds from their written metrics. A rewrite that did not lower the mean
depth (a low-cardinality key whose ties no sort can separate) is not committed, so the
decider cannot churn on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.base.layoutspec import Bound, LayoutSpec
from icefloe.optimizer import Depth, FileBounds
from icefloe.optimizer.layout import lowers_depth
from icefloe.optimizer.zlayout import key_ordered

Bounds = tuple[Bound | None, Bound | None]


@dataclass(frozen=True)
class LayoutGroups:
    """One partition's layout plan: groups of paths, and the depth before and after."""

    groups: tuple[tuple[str, ...], ...]
    before: Depth
    after: Depth
    files: tuple[FileBounds[str], ...]


def file_bounds(
    paths: Sequence[str], sizes: Sequence[int], bounds: Mapping[str, Bounds]
) -> list[FileBounds[str]]:
    """The partition's files with their key bounds (unbounded where metrics are missing)."""
    return [
        FileBounds(path, size, *bounds.get(path, (None, None)))
        for path, size in zip(paths, sizes, strict=True)
    ]


def key_order(paths: Sequence[str], bounds: Mapping[str, Bounds], spec: LayoutSpec) -> list[int]:
    """Indexes of ``paths`` by their files' lower bounds (unbounded first; a z-order's by
    the interleaved key of its box's lower corner), then path
    (``icefloe.optimizer.zlayout.key_ordered``)."""
    return key_ordered(file_bounds(paths, [0] * len(paths), bounds), spec.corner_columns)


def layout_groups(
    paths: Sequence[str],
    sizes: Sequence[int],
    bounds: Mapping[str, Bounds],
    spec: LayoutSpec,
    target: int,
) -> LayoutGroups:
    """The least re-sort that brings the partition's mean depth to the tolerance."""
    files = file_bounds(paths, sizes, bounds)
    plan = spec.plan(files, target)
    return LayoutGroups(plan.groups, plan.before, plan.after, tuple(files))


def depth_allows(before: float, after: float, tolerance: float, relayout: bool) -> bool:
    """Whether a rewrite's real depth ``after`` may be committed: a re-sort or re-z-order
    must lower the mean depth by enough to matter (``icefloe.optimizer.layout.lowers_depth``); a
    merge in key order must not take it past the tolerance (its outputs span each group's
    hull, which may reach over files it left alone)."""
    if relayout:
        return lowers_depth(before, after, tolerance)
    return after <= max(before, tolerance)


def depth_text(depth: Depth) -> str:
    return f"{depth.mean:.2f} (max {depth.max})"


def depth_after(
    kept: Sequence[FileBounds[str]], new_files: Sequence[Any], spec: LayoutSpec, jvm: Any
) -> Depth:
    """The partition's depth after a commit: ``kept`` files as they are, ``new_files``
    (Java ``DataFile``s just written) at the bounds of their written metrics."""
    convert = jvm.org.apache.iceberg.util.ByteBuffers
    written = []
    for f in new_files:
        lower, upper = (
            _java_map(f.lowerBounds(), spec, convert),
            _java_map(f.upperBounds(), spec, convert),
        )
        nulls, nans = (
            _java_counts(f.nullValueCounts(), spec),
            _java_counts(f.nanValueCounts(), spec),
        )
        lo, hi = spec.bounds(lower, upper, nulls, nans)
        written.append(FileBounds(str(f.location()), int(f.fileSizeInBytes()), lo, hi))
    return spec.depth([*kept, *written])


def _java_map(m: Any, spec: LayoutSpec, convert: Any) -> dict[int, bytes]:
    if m is None:
        return {}
    out = {}
    for fid in spec.field_ids:
        raw = m.get(fid)
        if raw is not None:
            out[fid] = bytes(convert.toByteArray(raw))
    return out


def _java_counts(m: Any, spec: LayoutSpec) -> dict[int, int]:
    if m is None:
        return {}
    return {fid: int(n) for fid in spec.field_ids if (n := m.get(fid)) is not None}
