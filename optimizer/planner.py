"""Minimum replacement: the least rewriting that brings a partition's entropy down.

``plan_partition`` turns a partition's data file sizes into groups of files to merge.

Output model (the actors' engines match it): a group whose rows take ``S`` bytes once
merged yields ``predict_output_sizes(S, T)``: Iceberg's output count (``output_count``:
``floor(S/T)`` files, plus one for a remainder over 0.75·T or one that would take the
others to 1.1·T) of even size. A group of up to 1.1·T is one file. ``S`` is the sum of
the files' ``merged`` bytes (:mod:`icefloe.optimizer.output_model`: their rows at the bytes per
row the table's rewrites write), or of their sizes when the caller knows nothing better;
small streaming files compress better merged, so planning by their sizes would write
outputs under the target that are merged again at the next pass.

Candidate groups:

* ``preserve_order=False`` -- modified First Fit Decreasing into bins of ``T`` over the
  undersized files. Modifications, all to replace fewer files: files at or above
  ``near_target · T`` (default 0.75, Iceberg's and Amoro's "big enough" ratio; such a
  file's error is at most ``(T/4)²``, under the default tolerance) are never packed;
  a file alone in its bin is not rewritten. Then a *spill* step: the lone files that FFD
  could not pair (they are mostly over ``T/2``, e.g. many 0.6·T files) form groups of
  at most ``SPILL_GROUP_TARGETS · T`` bytes, each kept only if it lowers the SSE and
  writes fewer files than it reads, and trimmed file by file while trimming helps. Then
  the chosen one-output groups are *balanced*: their files spread evenly over as few
  bins as hold them as one file each (``balanced``), which rewrites the same files into
  as many or fewer outputs with a lower SSE (1.0 + 0.5 · T becomes 0.75 + 0.75 · T;
  5 · T + 0.28 · T becomes five of 1.06 · T). Last, a small file that FFD left alone
  because it would take a bin past ``T`` (and no spill group took) is *folded* into the
  bin while it stays one file (``absorbed``: 0.54 + 0.27 + 0.21·T is one file of 1.02·T,
  where 0.81·T would be small again once compressed). Fewer, fuller bins can leave no
  room for that fold, so they are kept only if, folds included, they leave fewer files
  at an MSE no higher than before and keep a tolerance goal met (``_finished``). Bins of
  1.1·T instead would pair the wrong files: 400 + 690 would leave a 10 B file alone, and
  no group would lower the MSE of 10, 400 and 690 (T = 1000).
* ``preserve_order=True`` -- Knuth-Plass line breaking over consecutive files (see
  ``linebreak``); near-target and oversized files are barriers. Each run of 2+ files is
  a group.

Why SSE, not MSE, decides whether a group is worth it: SSE is a sum over files, so a
group's effect on it is local (``Σ e² of inputs - Σ e² of outputs``), independent of
the rest of the partition and of the other groups. MSE divides by the file count and
hides the very problem we fix: 1,000 one-byte files and one one-byte file have the same
MSE, while the SSE of the former is 1,000 times larger. A group inside one bin of ``T``
always lowers the SSE strictly (``(T-a-b)² < (T-a)² + (T-b)²`` iff ``2ab < T²``); a
group of several outputs must earn it, and write fewer files than it reads (two 300 MB
files under a 512 MB target would become two of 300 MB again: no work). The partition's
MSE is still reported from the full predicted file list, and a final guard drops groups
until ``mse_after <= mse_before``.

Essential, not complete: with ``tolerance > 0`` the goal is ``SSE' < tol² · N'``. A group
closes the gap ``SSE - tol²·N`` by its *progress* ``ΔSSE - tol² · (files it removes)``
(merging lowers N, which tightens the goal). Groups are taken greedily by progress per
byte rewritten until the goal is met, then groups that are no longer needed are dropped,
worst ratio first. Unordered plans also try FFD over only the smallest files (see
``_smallest_first``) and keep whichever of the two meets the goal with fewer bytes. If
even all groups cannot meet the goal, all beneficial groups are done.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from icefloe.optimizer.candidates import Group, absorbed, balanced, candidate_groups, ffd_groups
from icefloe.optimizer.entropy import (
    PartitionStats,
    output_count,
    output_sse,
    predict_output_sizes,
    stats_from_sizes,
)

DEFAULT_TOLERANCE_FRACTION = 1 / 3
"""Default tolerance as a fraction of the target, for callers without a configured one.

A partition is left alone while its RMS shortfall is under a third of the target. The
mean shortfall is then under a third too, so the partition holds fewer than 1.5x the
files of a perfect layout: past that point merging buys little planning or open-cost
relief per byte rewritten. Partitions made only of near-target files (>= 0.75 · T)
never need work; one empty
file beside nine full ones is tolerated, beside eight it is not. On the benchmark mix
(ours / Iceberg): a quarter of T rewrites ~0.57 of Iceberg's bytes for ~1.08x its files,
a third ~0.43 for ~1.14x, 0.4 ~0.33 for ~1.20x (``bench/planner_bench.py`` prints the
sweep). A configured ``tolerance_bytes`` always wins over this default.
"""

NEAR_TARGET_FRACTION = 0.75
"""Files at or above this fraction of the target are never packed (see module doc)."""


def default_tolerance(target: int) -> int:
    """Tolerance in bytes for ``target`` at ``DEFAULT_TOLERANCE_FRACTION``."""
    return int(target * DEFAULT_TOLERANCE_FRACTION)


@dataclass(frozen=True, slots=True)
class Plan:
    """Groups of file indices to merge and the predicted state of the partition after."""

    target: int
    groups: list[list[int]]
    predicted_outputs: list[list[int]]
    files_before: int
    files_after: int
    sse_before: int
    sse_after: int
    bytes_rewritten: int

    @property
    def mse_before(self) -> float:
        return self.sse_before / self.files_before if self.files_before else 0.0

    @property
    def mse_after(self) -> float:
        return self.sse_after / self.files_after if self.files_after else 0.0

    @property
    def files_rewritten(self) -> int:
        return sum(len(g) for g in self.groups)

    @property
    def is_empty(self) -> bool:
        return not self.groups


def _progress(g: Group, tol_sq: float) -> float:
    """How much a group closes the gap ``SSE - tol² · N`` (merging also lowers N)."""
    return g.gain - tol_sq * g.removed


def _ratio(g: Group, tol_sq: float) -> float:
    progress = _progress(g, tol_sq)
    return progress / g.read if g.read else math.copysign(math.inf, progress)


def _essential(groups: list[Group], sse: int, n: int, tol_sq: float) -> list[Group] | None:
    """Fewest bytes by greedy ratio, then drop the unneeded; None if out of reach."""
    gap = sse - tol_sq * n  # goal: gap < 0, i.e. SSE' < tol² · N'
    ranked = sorted(groups, key=lambda g: _ratio(g, tol_sq), reverse=True)
    chosen: list[Group] = []
    for g in ranked:
        if gap < 0:
            break
        if _progress(g, tol_sq) > 0:
            chosen.append(g)
            gap -= _progress(g, tol_sq)
    if gap >= 0:
        return None
    kept: list[Group] = []
    for g in reversed(chosen):  # drop what is no longer needed, worst ratio first
        if gap + _progress(g, tol_sq) < 0:
            gap += _progress(g, tol_sq)
        else:
            kept.append(g)
    kept.reverse()
    return kept


def _smallest_first(
    sizes: Sequence[int],
    target: int,
    limit: float,
    sse: int,
    n: int,
    tol_sq: float,
    merged: Sequence[int] | None = None,
) -> list[Group] | None:
    """Bins of only the ``m`` smallest files, for (about) the least ``m`` that meets the goal.

    Per byte rewritten, small files buy the most: a file of ``s`` bytes carries an error
    of ``(T - s)²``, so rewriting the smallest first is the fractional-knapsack optimum.
    FFD over *all* files instead pairs every big file with small fillers, and each bin
    spends most of its bytes on a file that was nearly fine. ``m`` is first estimated in
    one O(n) scan as if the prefix were packed perfectly into one group, then
    checked with real FFD bins and grown geometrically until they meet the goal, so a
    plan costs a few FFD runs, not one per candidate ``m``.
    """
    order = sorted((i for i, s in enumerate(sizes) if s < limit), key=sizes.__getitem__)
    written = sizes if merged is None else merged

    def plan(m: int) -> list[Group] | None:
        groups = [g for g in ffd_groups(order[:m], sizes, target, merged)[0] if g.gain > 0]
        gain = sum(g.gain for g in groups)
        removed = sum(g.removed for g in groups)
        return groups if sse - gain - tol_sq * (n - removed) < 0 else None

    m, inputs_sse, total = len(order), 0, 0
    for k, i in enumerate(order, start=1):  # estimate: the prefix as one group
        total += written[i]
        inputs_sse += (target - sizes[i]) ** 2
        outputs = output_count(total, target)
        if sse - inputs_sse + output_sse(total, target) - tol_sq * (n - k + outputs) < 0:
            m = k
            break
    step = max(1, m // 32)
    while True:
        found = plan(m)
        if found is not None:
            return _essential(found, sse, n, tol_sq)
        if m >= len(order):
            return None
        m, step = min(m + step, len(order)), step * 2


def _bytes(groups: list[Group]) -> int:
    return sum(g.read for g in groups)


def _mse(sse: int, n: int) -> float:
    return sse / n if n else 0.0


def _guard(groups: list[Group], sse: int, n: int) -> list[Group]:
    """Drop groups until the predicted MSE is not above the current one."""
    chosen = list(groups)
    gain = sum(g.gain for g in chosen)
    removed = sum(g.removed for g in chosen)
    before = _mse(sse, n)
    while chosen and _mse(sse - gain, n - removed) > before:
        best = min(
            range(len(chosen)),
            key=lambda k: _mse(sse - gain + chosen[k].gain, n - removed + chosen[k].removed),
        )
        gain -= chosen[best].gain
        removed -= chosen[best].removed
        chosen.pop(best)
    return chosen


def folded(
    groups: list[Group],
    sizes: Sequence[int],
    target: int,
    limit: float,
    stats: PartitionStats,
    candidates: Sequence[Group],
    merged: Sequence[int] | None = None,
) -> list[Group]:
    """``groups`` with the small files no candidate holds folded in (:func:`absorbed`),
    unless that would take the partition's MSE above where it was (a folded file's error
    can be under the mean: :func:`_guard`'s promise holds)."""
    out = absorbed(groups, sizes, target, limit, candidates, merged)
    gain = sum(g.gain for g in out)
    removed = sum(g.removed for g in out)
    return out if _mse(stats.sse - gain, stats.n - removed) <= stats.mse else groups


def _finished(
    groups: list[Group],
    sizes: Sequence[int],
    target: int,
    stats: PartitionStats,
    tol_sq: float,
    fold: Callable[[list[Group]], list[Group]],
    merged: Sequence[int] | None = None,
) -> list[Group]:
    """The chosen groups :func:`balanced`, then ``fold``-ed (:func:`folded`). Into fewer
    outputs only if, folds included, that leaves fewer files, a partition MSE at most where
    it was, and any goal (MSE < tol²) the spread over as many outputs meets: fewer, fuller
    bins can leave no room for a fold, and fewer files divide a smaller SSE by a smaller
    count."""
    spread = balanced(groups, sizes, target, merged=merged)
    fewer = fold(spread)
    if sum(g.outputs for g in spread) == sum(g.outputs for g in groups):
        return fewer  # as many outputs: what ``fewer=False`` would give
    same = fold(balanced(groups, sizes, target, fewer=False, merged=merged))

    def after(plan: list[Group]) -> tuple[int, float]:
        n = stats.n - sum(g.removed for g in plan)
        return n, _mse(stats.sse - sum(g.gain for g in plan), n)

    (n, mse), (n_same, mse_same) = after(fewer), after(same)
    lost = tol_sq > 0 and mse_same < tol_sq <= mse
    return fewer if n < n_same and mse <= stats.mse and not lost else same


def plan_partition(
    sizes: Sequence[int],
    target: int,
    tolerance: float = 0,
    preserve_order: bool = False,
    *,
    near_target: float = NEAR_TARGET_FRACTION,
    merged: Sequence[int] | None = None,
) -> Plan:
    """Plan the minimum replacement for one partition's data files.

    ``sizes``: data file sizes in bytes (in sort order when ``preserve_order``);
    ``target``: target file size; ``tolerance``: bytes, 0 for the complete plan;
    ``near_target``: fraction of ``target`` from which files are left alone (1.0 packs
    every undersized file); ``merged``: each file's bytes once merged with others
    (default: its size), what groups are packed and their outputs predicted by.
    ``plan.groups`` hold indices into ``sizes``.
    """
    if not 0 < near_target <= 1:
        raise ValueError(f"near_target must be in (0, 1], got {near_target}")
    if merged is not None and len(merged) != len(sizes):
        raise ValueError(f"merged has {len(merged)} sizes for {len(sizes)} files")
    stats = stats_from_sizes(sizes, target)
    chosen: list[Group] = []
    if stats.needs_work(tolerance):
        limit = near_target * target
        groups = candidates = candidate_groups(sizes, target, limit, preserve_order, merged)
        if tolerance > 0:
            tol_sq = tolerance * tolerance
            essential = _essential(groups, stats.sse, stats.n, tol_sq)
            if essential is not None and not preserve_order:
                small = _smallest_first(sizes, target, limit, stats.sse, stats.n, tol_sq, merged)
                if small is not None and _bytes(small) < _bytes(essential):
                    essential = small
            groups = groups if essential is None else essential
        chosen = _guard(groups, stats.sse, stats.n)
        if not preserve_order:

            def fold(plan: list[Group]) -> list[Group]:
                return folded(plan, sizes, target, limit, stats, candidates, merged)

            tol_sq = tolerance * tolerance
            chosen = _finished(chosen, sizes, target, stats, tol_sq, fold, merged)
    chosen.sort(key=lambda g: g.members[0])
    return Plan(
        target=target,
        groups=[list(g.members) for g in chosen],
        predicted_outputs=[predict_output_sizes(g.total, target) for g in chosen],
        files_before=stats.n,
        files_after=stats.n - sum(g.removed for g in chosen),
        sse_before=stats.sse,
        sse_after=stats.sse - sum(g.gain for g in chosen),
        bytes_rewritten=sum(g.read for g in chosen),
    )
