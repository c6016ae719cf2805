"""Minimum replacement for layout: the fewest bytes whose sorted rewrite lowers the depth.

Rewrite model (the sort actor must match it). Rewriting a set ``S`` of a partition's files:
``S`` falls into *groups*, the chain-overlap components of ``S``'s own intervals; each group
of ``B`` bytes is written as ``output_count(B, T)`` sorted, non-overlapping files
(``predict_output_sizes``: Iceberg's count, one file up to 1.1·T) that tile the group's hull
``[min lower, max upper]``. The files not in ``S`` stay as they are. After the rewrite the
point depth is the kept files' depth plus one inside each hull. Where the outputs'
boundaries fall inside a hull is not known without reading data, so every output of a group
is charged the deepest point of its hull; a kept file gets the deepest point of its own
interval. The predicted depth is therefore an upper bound on the real one when the writer
keeps each group's outputs inside its hull and apart from each other (a range-partitioned
sort does).

Which files. The mean over files can be lowered without fixing anything, by splitting
files into more outputs shallower than the mean. Two rules keep plans honest: a file
that overlaps no other is never rewritten (it is in order already), and every group's
outputs must be charged a lower depth than its deepest input (a rewrite that leaves the
overlap where it was only splits files). Files overlapping no other are also where the
partition falls apart into *clusters* (maximal chain-overlapping sets): no hull of a
cluster's files reaches another cluster, so each cluster's options are priced on its own
and their effects add up. The goal is ``Σ (depth - tolerance) <= 0`` over the files
after the rewrite, i.e. mean <= tolerance, decided exactly (``Fraction``). ``max`` gets
no promise: a deep cluster may stay deep when fixing cheaper ones is enough for the mean.

Search, minimising bytes rewritten (ties: fewer files). A cluster of at most
``EXACT_CLUSTER_FILES`` files offers every subset; a larger one the nested prefixes of
three *peels* (``_peel``: the widest deepest files first -- the newest out-of-order ones
--, the smallest deepest first, the smallest first), each stopped as soon as a prefix
meets the goal by itself. Options costing more without lowering the excess are dropped.
When the clusters' option counts multiply to at most ``EXACT_COMBINATIONS``, a
branch-and-bound search takes the cheapest combination; else clusters are upgraded
greedily by excess removed per byte, then stepped back down while the goal holds.
Last, chosen files are dropped one by one, biggest first, while the goal still holds
(the ``PRUNE_FILES`` biggest of each cluster are tried).

Guarantees. Nothing is chosen when the mean is within tolerance; otherwise the goal is
met (rewriting every cluster whole gives depth 1) with useful groups of overlapping
files only, and no chosen file can be left out (in a cluster with at most
``PRUNE_FILES`` chosen files). When every cluster has at most ``EXACT_CLUSTER_FILES``
files and their options multiply to at most ``EXACT_COMBINATIONS`` (true of every
partition of at most 10 files), the plan is the minimum over every rule-abiding subset:
the tests check this against a brute force. Larger clusters get no ratio bound: on random
partitions of 2 to 8 files with the peels and the greedy forced, the plan matched the
minimum in about 96 out of 100, and was up to 10x its bytes in the worst seen.
Cost: O(n log n) per priced option; a large cluster of ``c`` files, with its peels'
geometric batches and the capped prune, O(c log² c).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic

from icefloe.optimizer.entropy import predict_output_sizes
from icefloe.optimizer.layout import (
    Depth,
    FileBounds,
    K,
    Point,
    depth_of,
    encode_files,
    max_depths,
)

EXACT_CLUSTER_FILES = 10
"""Clusters up to this many files offer all 2^n - 1 subsets (1,023 evaluations)."""

EXACT_COMBINATIONS = 10_000
"""Branch-and-bound across clusters when the options multiply to at most this."""


@dataclass(frozen=True, slots=True)
class LayoutPlan(Generic[K]):
    """Groups of file ids to rewrite sorted, and the predicted depth before and after.

    Each group is written as ``output_count(group bytes, target)`` sorted files over the
    group's hull (module doc); ``output_files`` sums those counts.
    """

    groups: tuple[tuple[K, ...], ...]
    bytes_rewritten: int
    output_files: int
    before: Depth
    after: Depth

    @property
    def files(self) -> tuple[K, ...]:
        return tuple(i for g in self.groups for i in g)

    @property
    def is_empty(self) -> bool:
        return not self.groups


@dataclass(frozen=True, slots=True)
class _Option:
    """One way to rewrite part of a cluster, priced within that cluster."""

    groups: tuple[tuple[int, ...], ...]
    bytes: int
    files: int
    depth_sum: int  # Σ depth over the cluster's files after the rewrite
    count: int  # the cluster's files after the rewrite
    max: int
    outputs: int
    useful: bool  # every group's outputs are shallower than its deepest input


@dataclass(frozen=True, slots=True)
class _Partition:
    """What pricing an option needs to know of the whole partition."""

    lows: Sequence[Point]
    highs: Sequence[Point]
    sizes: Sequence[int]
    depths: Sequence[int]  # each file's depth before any rewrite
    target: int
    tol: Fraction


def components(
    members: Sequence[int], lows: Sequence[Point], highs: Sequence[Point]
) -> list[list[int]]:
    """Chain-overlap components of ``members`` (closed intervals: touching overlaps)."""
    out: list[list[int]] = []
    reach: Point | None = None
    for i in sorted(members, key=lambda m: (lows[m], m)):
        if reach is None or lows[i] > reach:
            out.append([])
            reach = highs[i]
        elif highs[i] > reach:
            reach = highs[i]
        out[-1].append(i)
    return out


def _rewrite(
    c: _Partition, members: Sequence[int], chosen: Sequence[int]
) -> tuple[_Option, dict[int, int]]:
    """Price rewriting ``chosen`` within cluster ``members``; kept files' depths after."""
    picked = set(chosen)
    kept = [i for i in members if i not in picked]
    groups = components(chosen, c.lows, c.highs)
    outputs = [len(predict_output_sizes(sum(c.sizes[i] for i in g), c.target)) for g in groups]
    hulls = [g for g, m in zip(groups, outputs, strict=True) if m]
    deepest = [max(c.depths[i] for i in g) for g in hulls]
    lows = [c.lows[i] for i in kept] + [min(c.lows[i] for i in g) for g in hulls]
    highs = [c.highs[i] for i in kept] + [max(c.highs[i] for i in g) for g in hulls]
    depths = max_depths(lows, highs)
    kept_depths = depths[: len(kept)]
    charged = [(m, d) for m, d in zip((m for m in outputs if m), depths[len(kept) :], strict=True)]
    option = _Option(
        groups=tuple(tuple(sorted(g)) for g in groups),
        bytes=sum(c.sizes[i] for i in chosen),
        files=len(chosen),
        depth_sum=sum(kept_depths) + sum(m * d for m, d in charged),
        count=len(kept) + sum(outputs),
        max=max(kept_depths + [d for _, d in charged], default=0),
        outputs=sum(outputs),
        useful=all(d < top for (_, d), top in zip(charged, deepest, strict=True)),
    )
    return option, dict(zip(kept, kept_depths, strict=True))


PEEL_GROWTH = 8
"""A peel's batch: one file, then one file per ``PEEL_GROWTH`` already chosen."""

PRUNE_FILES = 64
"""The last step tries to leave out at most this many chosen files per cluster."""

PEELS = ("widest", "deepest", "cheapest")
"""The orders in which a large cluster's files are peeled (``_peel``)."""


def _peel(
    c: _Partition, members: Sequence[int], depths: dict[int, int], how: str, enough: Fraction
) -> list[_Option]:
    """Nested options: add kept files in order, re-pricing after each batch.

    A batch is one file while fewer than ``PEEL_GROWTH`` are chosen, then a
    ``1/PEEL_GROWTH`` share of those chosen: O(PEEL_GROWTH · log c) batches of
    O(c log c) each, and a prefix overshoots the least that suffices by at most that share.

    Stops at the first useful prefix whose excess is at most ``enough``: it meets the
    partition's goal by itself, so no larger (costlier) prefix can be part of a cheapest
    plan. Typically a few late files are peeled, not the whole cluster.

    ``widest``: the deepest file, ties to the one overlapping most files (the late
    out-of-order files that span the range). ``deepest``: the deepest, ties to the
    smallest. ``cheapest``: the smallest file that still overlaps another. Remaining ties
    go to the earlier file.
    """
    lows = sorted(c.lows[i] for i in members)
    highs = sorted(c.highs[i] for i in members)
    degree = {  # files overlapping i (i included): those not wholly above or below it
        i: bisect.bisect_right(lows, c.highs[i]) - bisect.bisect_left(highs, c.lows[i])
        for i in members
    }

    def rank(i: int) -> tuple[int, int, int, int]:
        if how == "widest":
            return depths[i], degree[i], -c.sizes[i], -i
        if how == "deepest":
            return depths[i], -c.sizes[i], degree[i], -i
        return int(depths[i] > 1), -c.sizes[i], depths[i], -i

    kept = list(members)
    chosen: list[int] = []
    options: list[_Option] = []
    while kept:
        batch = set(sorted(kept, key=rank, reverse=True)[: max(1, len(chosen) // PEEL_GROWTH)])
        kept = [i for i in kept if i not in batch]
        chosen += sorted(batch)
        option, depths = _rewrite(c, members, chosen)
        options.append(option)
        if option.useful and _excess(option, c.tol) <= enough:
            break
    return options


def _options(
    c: _Partition, members: list[int], depths: dict[int, int], gap: Fraction
) -> list[_Option]:
    """The cluster's menu: useful options, cheapest first, excess strictly falling; [0] = none."""
    before = [depths[i] for i in members]
    keep = _Option((), 0, 0, sum(before), len(members), max(before), 0, True)
    if len(members) <= EXACT_CLUSTER_FILES:
        subsets = itertools.chain.from_iterable(
            itertools.combinations(members, r) for r in range(1, len(members) + 1)
        )
        found = [_rewrite(c, members, s)[0] for s in subsets]
    else:
        enough = _excess(keep, c.tol) - gap
        found = [o for how in PEELS for o in _peel(c, members, dict(depths), how, enough)]
    menu: list[_Option] = []
    for o in sorted([keep, *(o for o in found if o.useful)], key=lambda o: (o.bytes, o.files)):
        if not menu or _excess(o, c.tol) < _excess(menu[-1], c.tol):
            menu.append(o)
    return menu


def _excess(o: _Option, tol: Fraction) -> Fraction:
    return o.depth_sum - tol * o.count


def _exact(menus: list[list[_Option]], base: Fraction, tol: Fraction) -> list[int]:
    """Branch and bound: the cheapest (bytes, files) choice with total excess <= 0."""
    floor = [Fraction(0)] * (len(menus) + 1)  # least excess the clusters from k on reach
    for k in range(len(menus) - 1, -1, -1):
        floor[k] = floor[k + 1] + min(_excess(o, tol) for o in menus[k])
    best: tuple[tuple[int, int], list[int]] | None = None
    choice: list[int] = []

    def search(k: int, excess: Fraction, cost: tuple[int, int]) -> None:
        nonlocal best
        if best is not None and cost >= best[0]:
            return
        if excess + floor[k] > 0:
            return
        if k == len(menus):
            best = (cost, list(choice))
            return
        for j, o in enumerate(menus[k]):
            choice.append(j)
            search(k + 1, excess + _excess(o, tol), (cost[0] + o.bytes, cost[1] + o.files))
            choice.pop()

    search(0, base, (0, 0))
    assert best is not None, "rewriting every cluster whole always meets a tolerance >= 1"
    return best[1]


def _upgrade(menu: list[_Option], now: int, tol: Fraction) -> tuple[Fraction | float, int]:
    """The best step up from option ``now``: (excess removed per extra byte, option)."""
    rate, step = max((_rate(menu[now], menu[j], tol), -j) for j in range(now + 1, len(menu)))
    return rate, -step


def _greedy(menus: list[list[_Option]], base: Fraction, tol: Fraction) -> list[int]:
    """Upgrade by excess removed per byte until the goal holds, then step back down.

    One heap entry per cluster, its best upgrade: O(options · log clusters).
    """
    at = [0] * len(menus)
    excess = base + sum((_excess(m[0], tol) for m in menus), Fraction(0))
    heap: list[tuple[Fraction | float, int, int]] = []
    for k, menu in enumerate(menus):
        if len(menu) > 1:
            rate, j = _upgrade(menu, 0, tol)
            heap.append((-rate, k, j))
    heapq.heapify(heap)
    order: list[int] = []
    while excess > 0:  # the heap lasts: every cluster's last option together meet the goal
        _, k, j = heapq.heappop(heap)
        excess += _excess(menus[k][j], tol) - _excess(menus[k][at[k]], tol)
        at[k] = j
        order.append(k)
        if j + 1 < len(menus[k]):
            rate, j = _upgrade(menus[k], j, tol)
            heapq.heappush(heap, (-rate, k, j))
    for k in reversed(order):
        for j in range(at[k]):
            change = _excess(menus[k][j], tol) - _excess(menus[k][at[k]], tol)
            if excess + change <= 0:
                excess += change
                at[k] = j
                break
    return at


def _rate(now: _Option, then: _Option, tol: Fraction) -> Fraction | float:
    gain = _excess(now, tol) - _excess(then, tol)
    cost = then.bytes - now.bytes
    return gain / cost if cost else float("inf")


def _prune(
    c: _Partition, clusters: list[list[int]], picks: list[_Option], base: Fraction, tol: Fraction
) -> list[_Option]:
    """Drop chosen files, biggest first, while the goal still holds; the ``PRUNE_FILES``
    biggest per cluster are tried, each at O(c log c) for a cluster of ``c`` files."""
    picks = list(picks)
    excess = base + sum((_excess(o, tol) for o in picks), Fraction(0))
    for k, members in enumerate(clusters):
        chosen = [i for g in picks[k].groups for i in g]
        for i in sorted(chosen, key=lambda i: (-c.sizes[i], i))[:PRUNE_FILES]:
            fewer = [j for j in chosen if j != i]
            option = _rewrite(c, members, fewer)[0]
            change = _excess(option, tol) - _excess(picks[k], tol)
            if option.useful and excess + change <= 0:
                excess += change
                picks[k], chosen = option, fewer
    return picks


def plan_layout(
    files: Sequence[FileBounds[K]], tolerance: float, target_size: int
) -> LayoutPlan[K]:
    """The minimum replacement that brings the mean clustering depth to ``tolerance``.

    ``tolerance``: the table's ``clustering_tolerance``, >= 1 (1 asks for a fully sorted
    partition); ``target_size``: target file size in bytes. See the module doc for the
    rewrite model and what is guaranteed.
    """
    if tolerance < 1:
        raise ValueError(f"clustering tolerance must be >= 1, got {tolerance}")
    if target_size <= 0:
        raise ValueError(f"target file size must be > 0 bytes, got {target_size}")
    lows, highs = encode_files(files)
    depths = max_depths(lows, highs)
    before = depth_of(depths)
    tol = Fraction(tolerance)
    gap = sum(depths) - tol * len(depths)  # the excess the plan must remove
    if gap <= 0:
        return LayoutPlan((), 0, 0, before, before)
    c = _Partition(lows, highs, [f.size for f in files], depths, target_size, tol)
    clusters = components(range(len(files)), lows, highs)
    lone = [g[0] for g in clusters if len(g) == 1]
    overlapping = [g for g in clusters if len(g) > 1]
    menus = [_options(c, g, dict(enumerate(depths)), gap) for g in overlapping]
    lone_excess = len(lone) * (1 - tol)
    choices = [k for k, m in enumerate(menus) if len(m) > 1]  # the rest stay as they are
    fixed = sum((_excess(m[0], tol) for m in menus if len(m) == 1), Fraction(0))
    search = _exact if math.prod(len(m) for m in menus) <= EXACT_COMBINATIONS else _greedy
    at = [0] * len(menus)
    chosen = search([menus[k] for k in choices], lone_excess + fixed, tol)
    for k, j in zip(choices, chosen, strict=True):
        at[k] = j
    picks = [m[j] for m, j in zip(menus, at, strict=True)]
    picks = _prune(c, overlapping, picks, lone_excess, tol)
    count = len(lone) + sum(o.count for o in picks)
    depth_sum = len(lone) + sum(o.depth_sum for o in picks)
    after = Depth(
        files=count,
        mean=depth_sum / count if count else 0.0,
        max=max([1] * bool(lone) + [o.max for o in picks], default=0),
    )
    groups = sorted(g for o in picks for g in o.groups)
    return LayoutPlan(
        groups=tuple(tuple(files[i].id for i in g) for g in groups),
        bytes_rewritten=sum(o.bytes for o in picks),
        output_files=sum(o.outputs for o in picks),
        before=before,
        after=after,
    )
