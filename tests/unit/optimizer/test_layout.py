"""Clustering depth and layout plans, against slow references and a brute force.

The references share no code with ``icefloe.optimizer.layout``: bounds become numbers (``None`` =
±inf), a file's depth is the deepest of *all* endpoints inside it, counted file by file
(O(n²)), and the rewrite model is re-derived from the module doc. The brute force then
tries every subset of overlapping files.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from fractions import Fraction
from itertools import combinations
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import (
    Depth,
    FileBounds,
    LayoutPlan,
    clustering_depth,
    layoutplan,
    output_count,
    plan_layout,
)

pytestmark = pytest.mark.unit

Interval = tuple[float, float]


def interval(f: FileBounds[int]) -> Interval:
    lo = -math.inf if f.lower is None else float(f.lower[0])  # type: ignore[arg-type]
    hi = math.inf if f.upper is None else float(f.upper[0])  # type: ignore[arg-type]
    return lo, hi


def ref_depths(intervals: list[Interval]) -> list[int]:
    """Deepest point inside each interval, trying every endpoint of every interval."""
    points = [p for iv in intervals for p in iv]
    out = []
    for lo, hi in intervals:
        inside = [p for p in points if lo <= p <= hi]
        out.append(max(sum(1 for a, b in intervals if a <= p <= b) for p in inside))
    return out


def overlap(a: Interval, b: Interval) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def ref_groups(chosen: list[int], ivs: list[Interval]) -> list[list[int]]:
    """Chain-overlap components of ``chosen``, by repeated merging."""
    groups = [[i] for i in chosen]
    merged = True
    while merged:
        merged = False
        for x, y in combinations(range(len(groups)), 2):
            if any(overlap(ivs[i], ivs[j]) for i in groups[x] for j in groups[y]):
                groups[x] += groups.pop(y)
                merged = True
                break
    return sorted(sorted(g) for g in groups)


def ref_after(
    files: list[FileBounds[int]], chosen: list[int], target: int
) -> tuple[int, int, int, bool]:
    """(Σ depth, files, max depth, useful) after rewriting ``chosen`` (the model)."""
    ivs = [interval(f) for f in files]
    before = ref_depths(ivs)
    kept = [i for i in range(len(files)) if i not in chosen]
    layers = [ivs[i] for i in kept]
    outs, deepest = [], []
    for g in ref_groups(chosen, ivs):
        m = output_count(sum(files[i].size for i in g), target)  # the planner's model
        if m:
            layers.append((min(ivs[i][0] for i in g), max(ivs[i][1] for i in g)))
            outs.append(m)
            deepest.append(max(before[i] for i in g))
    d = ref_depths(layers)
    charged = d[len(kept) :]
    total = sum(d[: len(kept)]) + sum(m * x for m, x in zip(outs, charged, strict=True))
    useful = all(x < top for x, top in zip(charged, deepest, strict=True))
    return total, len(kept) + sum(outs), max(d, default=0), useful


def meets(total: int, count: int, tol: float) -> bool:
    return Fraction(total) <= Fraction(tol) * count


def brute_force(files: list[FileBounds[int]], tol: float, target: int) -> tuple[int, int]:
    """Least (bytes, files) over the useful rewrites of overlapping files meeting ``tol``."""
    ivs = [interval(f) for f in files]
    movable = [i for i in range(len(files)) if ref_depths(ivs)[i] > 1]
    best: tuple[int, int] | None = None
    for r in range(len(movable) + 1):
        for subset in combinations(movable, r):
            cost = (sum(files[i].size for i in subset), r)
            if best is not None and cost >= best:
                continue
            total, count, _, useful = ref_after(files, list(subset), target)
            if useful and meets(total, count, tol):
                best = cost
    assert best is not None
    return best


bound = st.one_of(st.none(), st.integers(0, 12))


@st.composite
def partitions(draw: st.DrawFn, max_files: int = 8) -> list[FileBounds[int]]:
    n = draw(st.integers(0, max_files))
    out = []
    for i in range(n):
        lo, hi = draw(bound), draw(bound)
        if lo is not None and hi is not None and hi < lo:
            lo, hi = hi, lo
        size = draw(st.integers(0, 300))
        out.append(
            FileBounds(i, size, None if lo is None else (lo,), None if hi is None else (hi,))
        )
    return out


tolerances = st.sampled_from([1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0])


def check_plan(
    files: list[FileBounds[int]], plan: LayoutPlan[int], tol: float, target: int
) -> None:
    chosen = list(plan.files)
    total, count, top, useful = ref_after(files, chosen, target)
    assert meets(total, count, tol) and useful
    assert plan.after.files == count and plan.after.max == top
    assert plan.after.mean == pytest.approx(total / count if count else 0.0)
    assert plan.bytes_rewritten == sum(files[i].size for i in chosen)
    assert [list(g) for g in plan.groups] == ref_groups(chosen, [interval(f) for f in files])
    assert len(set(chosen)) == len(chosen)
    depths = ref_depths([interval(f) for f in files])
    assert all(depths[i] > 1 for i in chosen), "a file overlapping nothing was rewritten"
    if not files or meets(sum(depths), len(depths), tol):
        assert plan.is_empty and plan.after == plan.before
    for i in chosen:  # no chosen file can be left out
        total, count, _, useful = ref_after(files, [j for j in chosen if j != i], target)
        assert not (useful and meets(total, count, tol))


@settings(max_examples=400, deadline=None, database=None)
@given(partitions())
def test_depth_matches_reference(files: list[FileBounds[int]]) -> None:
    d = ref_depths([interval(f) for f in files])
    got = clustering_depth(files)
    assert got.files == len(files) and got.max == max(d, default=0)
    assert got.mean == pytest.approx(sum(d) / len(d) if d else 0.0)


@settings(max_examples=300, deadline=None, database=None)
@given(partitions(), tolerances, st.sampled_from([50, 100, 250]))
def test_plan_is_the_brute_force_minimum(
    files: list[FileBounds[int]], tol: float, target: int
) -> None:
    plan = plan_layout(files, tol, target)
    check_plan(files, plan, tol, target)
    assert (plan.bytes_rewritten, len(plan.files)) == brute_force(files, tol, target)


@settings(max_examples=300, deadline=None, database=None)
@given(partitions(), tolerances, st.sampled_from([50, 100, 250]), st.sampled_from([0, 10_000]))
def test_large_cluster_path_meets_tolerance_and_nothing_can_be_dropped(
    files: list[FileBounds[int]], tol: float, target: int, combinations: int
) -> None:
    """Peel options, then branch and bound or the greedy (forced on small partitions):
    the goal is met and no chosen file can be left out (``check_plan``); no ratio to the
    brute force is promised on this path."""
    with (
        mock.patch.object(layoutplan, "EXACT_CLUSTER_FILES", 0),
        mock.patch.object(layoutplan, "EXACT_COMBINATIONS", combinations),
    ):
        plan = plan_layout(files, tol, target)
    check_plan(files, plan, tol, target)


def test_splitting_a_file_is_not_a_fix() -> None:
    """Rewriting file 4 alone would meet the tolerance only by splitting it into two
    outputs as deep as itself (more files, same overlap): not a useful rewrite."""
    spans = [(30, 1, 1), (294, 2, 6), (254, 6, 12), (91, 6, 8), (56, 10, 11), (116, 6, 8)]
    files = [FileBounds(i, s, (lo,), (hi,)) for i, (s, lo, hi) in enumerate(spans)]
    files.append(FileBounds(6, 198, (1,), (5,)))
    total, count, _, useful = ref_after(files, [4], 50)
    assert meets(total, count, 3.0) and not useful
    plan = plan_layout(files, 3.0, 50)
    check_plan(files, plan, 3.0, 50)
    assert plan.files != (4,) and plan.bytes_rewritten == brute_force(files, 3.0, 50)[0]


@pytest.mark.parametrize("tol", [1.0, 1.5, 2.0, 3.0])
def test_many_clusters_take_the_greedy_and_still_meet_the_tolerance(tol: float) -> None:
    """Hundreds of small clusters multiply past EXACT_COMBINATIONS: the greedy path, with
    clusters whose only option is to stay (no rewrite of theirs lowers the excess). The
    clusters lie 100 keys apart, so the reference prices each on its own and adds up."""
    rng = random.Random(7)
    clusters: list[list[FileBounds[int]]] = []
    for c in range(300):
        clusters.append([])
        for k in range(rng.randint(2, 4)):
            lo, hi = 100 * c + rng.randint(0, 5), 100 * c + 5 + rng.randint(0, 5)
            clusters[-1].append(FileBounds(k, rng.randint(1, 300), (lo,), (hi,)))
    files = [replace(f, id=(c, f.id)) for c, fs in enumerate(clusters) for f in fs]
    plan = plan_layout(files, tol, 100)
    total = count = 0
    for c, fs in enumerate(clusters):
        chosen = [k for cc, k in plan.files if cc == c]
        t, n, _, useful = ref_after(fs, chosen, 100)
        total, count = total + t, count + n
        assert useful or not chosen
    assert meets(total, count, tol)
    assert (plan.after.files, plan.after.mean) == (count, pytest.approx(total / count))


def test_sorted_partition_has_depth_one_and_a_common_point_depth_n() -> None:
    sorted_files = [FileBounds(i, 1, (10 * i,), (10 * i + 9,)) for i in range(5)]
    assert clustering_depth(sorted_files) == Depth(files=5, mean=1.0, max=1)
    stacked = [FileBounds(i, 1, (i,), (20 + i,)) for i in range(4)]
    assert clustering_depth(stacked) == Depth(files=4, mean=4.0, max=4)
    assert clustering_depth([]) == Depth(files=0, mean=0.0, max=0)


def test_touching_bounds_overlap_and_missing_bounds_span_their_side() -> None:
    touching = [FileBounds("a", 1, (0,), (5,)), FileBounds("b", 1, (5,), (9,))]
    assert clustering_depth(touching).max == 2
    open_low = [FileBounds("a", 1, None, (0,)), FileBounds("b", 1, (-(10**9),), (-(10**9),))]
    assert clustering_depth(open_low).max == 2
    open_high = [FileBounds("a", 1, (3,), None), FileBounds("b", 1, (10**9,), (10**9,))]
    assert clustering_depth(open_high).max == 2
    assert clustering_depth(open_high[:1] + [FileBounds("c", 1, (0,), (2,))]).max == 1


def test_multi_column_keys_compare_as_tuples() -> None:
    # (1, 9) < (2, 0): lexicographic, so these two do not overlap although 9 > 0.
    files = [FileBounds("a", 1, (1, 0), (1, 9)), FileBounds("b", 1, (2, 0), (2, 5))]
    assert clustering_depth(files).max == 1
    # a missing second column on (1, None) spans every (1, x) on that side.
    files.append(FileBounds("c", 1, (1, None), (1, None)))
    assert clustering_depth(files) == Depth(files=3, mean=5 / 3, max=2)
    strings = [
        FileBounds("e", 1, ("b", "a"), ("b", "z")),
        FileBounds("f", 1, ("a", "z"), ("b", "b")),
    ]
    assert clustering_depth(strings).max == 2


def test_newest_out_of_order_files_are_the_minimum_replacement() -> None:
    base = [FileBounds(i, 100, (2 * i,), (2 * i + 1,)) for i in range(100)]
    new = [FileBounds(100 + k, 10, (0,), (199,)) for k in range(3)]
    assert clustering_depth(base + new).mean == 4.0
    plan = plan_layout(base + new, 2.0, 100)  # one cluster of 103 files: the peel
    assert plan.files == (100, 101, 102) and plan.output_files == 1
    assert plan.after == Depth(files=101, mean=2.0, max=2)
    full = plan_layout(base + new, 1.5, 100)  # the outputs cover every base file
    assert len(full.files) == 103 and full.after.mean == 1.0


def test_only_the_files_under_a_narrow_late_file_are_rewritten() -> None:
    base = [FileBounds(i, 100, (2 * i,), (2 * i + 1,)) for i in range(100)]
    late = FileBounds(100, 10, (20,), (41,))
    plan = plan_layout([*base, late], 1.05, 100)
    assert plan.files == (*range(10, 21), 100)
    # 1,110 B: eleven files, the remainder folded in (twelve would leave a 10 B sliver)
    assert plan.after == Depth(files=100, mean=1.0, max=1) and plan.output_files == 11


def test_nothing_to_do_within_tolerance_and_bad_arguments() -> None:
    files = [FileBounds(0, 5, (0,), (9,)), FileBounds(1, 5, (5,), (15,))]
    assert plan_layout(files, 2.0, 10).is_empty
    assert not plan_layout(files, 1.0, 10).is_empty
    with pytest.raises(ValueError, match="tolerance"):
        plan_layout(files, 0.5, 10)
    with pytest.raises(ValueError, match="target"):
        plan_layout(files, 1.0, 0)
    with pytest.raises(ValueError, match="lower bound"):
        clustering_depth([FileBounds(0, 1, (5,), (4,))])
    with pytest.raises(ValueError, match="size"):
        clustering_depth([FileBounds(0, -1, (4,), (5,))])
