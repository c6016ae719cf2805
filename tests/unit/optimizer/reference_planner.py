"""The unordered planner as it was before #21 made it fast: the reference it must equal.

A plain copy of the straightforward pre-#21 code path of ``plan_partition``: FFD with a
max-tree over every opened bin, LPT with one ``(load, bin)`` heap step per file, groups
scored file by file, the spread built as groups before it is judged. The fast code must
give the very same plans (groups in the same order, same predicted stats) for every
input; ``test_planner_reference.py`` checks it, ``bench/planner_bench.py`` times both.
Only the containers (``Group``, ``Plan``), the entropy helpers, Knuth-Plass and the fold
of left-out files (``folded``; none of them part of #21) are shared with the code under
test. Not collected by pytest (no ``test_``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from icefloe.optimizer.candidates import SPILL_GROUP_TARGETS, Group
from icefloe.optimizer.entropy import (
    is_short,
    one_file_max,
    output_count,
    output_sse,
    predict_output_sizes,
    stats_from_sizes,
)
from icefloe.optimizer.linebreak import best_runs
from icefloe.optimizer.planner import NEAR_TARGET_FRACTION, Plan, folded

_SPILL_TRIM_PASSES = 4


def first_fit_decreasing(weights: Sequence[int], capacity: int) -> list[list[int]]:
    """FFD; first bin with room found by descending a max-tree of the bins' free space."""
    if capacity <= 0:
        raise ValueError(f"capacity must be > 0, got {capacity}")
    order = sorted(range(len(weights)), key=weights.__getitem__, reverse=True)
    oversized: list[list[int]] = []
    fitting: list[int] = []
    total = 0
    for i in order:
        w = weights[i]
        if w < 0:
            raise ValueError(f"weights must be >= 0, got {w} at index {i}")
        if w > capacity:
            oversized.append([i])
        else:
            fitting.append(i)
            total += w
    if not fitting:
        return oversized
    max_bins = min(len(fitting), 2 * (-(-total // capacity)) + 1)
    size = 1
    while size < max_bins:
        size *= 2
    tree = [-1] * (2 * size)  # free space of opened bins; -1 marks a bin not yet opened
    bins: list[list[int]] = []
    for i in fitting:
        w = weights[i]
        if tree[1] < w:  # no opened bin has room: open the next one
            node = size + len(bins)
            bins.append([i])
            value = capacity - w
            tree[node] = value
            node //= 2
            while node and tree[node] < value:
                tree[node] = value
                node //= 2
            continue
        node = 1
        while node < size:  # leftmost opened bin with free space >= w
            node *= 2
            if tree[node] < w:
                node += 1
        bins[node - size].append(i)
        tree[node] -= w
        node //= 2
        while node:
            left = tree[2 * node]
            right = tree[2 * node + 1]
            best = left if left >= right else right
            if tree[node] == best:
                break
            tree[node] = best
            node //= 2
    return bins + oversized


def balance(weights: Sequence[int], bins: int) -> list[list[int]]:
    """LPT: heaviest first, each into the lightest bin (ties: the lowest bin)."""
    if bins <= 0:
        raise ValueError(f"bins must be > 0, got {bins}")
    order = sorted(range(len(weights)), key=weights.__getitem__, reverse=True)
    heap = [(0, b) for b in range(bins)]
    out: list[list[int]] = [[] for _ in range(bins)]
    for i in order:
        if weights[i] < 0:
            raise ValueError(f"weights must be >= 0, got {weights[i]} at index {i}")
        load, b = heap[0]
        out[b].append(i)
        heapq.heapreplace(heap, (load + weights[i], b))
    return out


def make_group(members: Sequence[int], sizes: Sequence[int], target: int) -> Group:
    total = 0
    before = 0
    for i in members:
        s = sizes[i]
        total += s
        e = target - s if s < target else 0
        before += e * e
    outputs = output_count(total, target)
    return Group(tuple(sorted(members)), total, before - output_sse(total, target), outputs, total)


def spill_group(lone: list[int], sizes: Sequence[int], target: int) -> Group | None:
    members = sorted(lone, key=sizes.__getitem__)
    if len(members) < 2:
        return None
    group = make_group(members, sizes, target)
    for _ in range(_SPILL_TRIM_PASSES):
        if len(members) <= 2:
            break
        best, best_gain, seen = -1, group.gain, set()
        for pos, i in enumerate(members):
            s = sizes[i]
            if s in seen:
                continue
            seen.add(s)
            if output_count(group.total - s, target) >= len(members) - 1:
                continue
            e = target - s
            gain = (
                group.gain
                - e * e
                + output_sse(group.total, target)
                - output_sse(group.total - s, target)
            )
            if gain > best_gain:
                best, best_gain = pos, gain
        if best < 0:
            break
        members.pop(best)
        group = make_group(members, sizes, target)
    return group if group.gain > 0 and group.removed > 0 else None


def ffd_groups(
    movable: Sequence[int], sizes: Sequence[int], target: int
) -> tuple[list[Group], list[int]]:
    bins = first_fit_decreasing([sizes[i] for i in movable], target)
    groups: list[Group] = []
    lone: list[int] = []
    for b in bins:
        if len(b) >= 2:
            groups.append(make_group([movable[k] for k in b], sizes, target))
        else:
            lone.append(movable[b[0]])
    return groups, lone


def candidate_groups(
    sizes: Sequence[int], target: int, limit: float, preserve_order: bool
) -> list[Group]:
    if preserve_order:
        runs = best_runs(sizes, target, limit=math.ceil(limit))
        return [make_group(range(a, b), sizes, target) for a, b in runs if b - a >= 2]
    groups, lone = ffd_groups([i for i, s in enumerate(sizes) if s < limit], sizes, target)
    lone.sort(key=sizes.__getitem__)
    chunk: list[int] = []
    chunk_bytes = 0
    for k, i in enumerate(lone):
        chunk.append(i)
        chunk_bytes += sizes[i]
        last = k + 1 == len(lone)
        if last or chunk_bytes + sizes[lone[k + 1]] > SPILL_GROUP_TARGETS * target:
            spill = spill_group(chunk, sizes, target)
            if spill is not None:
                groups.append(spill)
            chunk, chunk_bytes = [], 0
    return [g for g in groups if g.gain > 0]


def balanced(
    groups: Sequence[Group], sizes: Sequence[int], target: int, fewer: bool = True
) -> list[Group]:
    bins = [g for g in groups if g.outputs == 1]
    if len(bins) < 2:
        return list(groups)
    members = [i for g in bins for i in g.members]
    fewest = math.ceil(sum(sizes[i] for i in members) / one_file_max(target))
    for count in sorted({fewest, fewest + 1, len(bins)} if fewer else {len(bins)}):
        if count > len(bins) or 2 * count > len(members):
            continue
        spread = [
            make_group([members[k] for k in b], sizes, target)
            for b in balance([sizes[i] for i in members], count)
        ]
        if any(len(g.members) < 2 or g.outputs != 1 for g in spread) or sum(
            g.gain for g in spread
        ) <= sum(g.gain for g in bins):
            continue
        if sum(is_short(g.total, target) for g in spread) > sum(
            is_short(g.total, target) for g in bins
        ):
            continue
        return [g for g in groups if g.outputs != 1] + spread
    return list(groups)


def _progress(g: Group, tol_sq: float) -> float:
    return g.gain - tol_sq * g.removed


def _ratio(g: Group, tol_sq: float) -> float:
    progress = _progress(g, tol_sq)
    return progress / g.total if g.total else math.copysign(math.inf, progress)


def _essential(groups: list[Group], sse: int, n: int, tol_sq: float) -> list[Group] | None:
    gap = sse - tol_sq * n
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
    for g in reversed(chosen):
        if gap + _progress(g, tol_sq) < 0:
            gap += _progress(g, tol_sq)
        else:
            kept.append(g)
    kept.reverse()
    return kept


def _smallest_first(
    sizes: Sequence[int], target: int, limit: float, sse: int, n: int, tol_sq: float
) -> list[Group] | None:
    order = sorted((i for i, s in enumerate(sizes) if s < limit), key=sizes.__getitem__)

    def plan(m: int) -> list[Group] | None:
        groups = [g for g in ffd_groups(order[:m], sizes, target)[0] if g.gain > 0]
        gain = sum(g.gain for g in groups)
        removed = sum(g.removed for g in groups)
        return groups if sse - gain - tol_sq * (n - removed) < 0 else None

    m, inputs_sse, total = len(order), 0, 0
    for k, i in enumerate(order, start=1):
        total += sizes[i]
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


def _mse(sse: int, n: int) -> float:
    return sse / n if n else 0.0


def _guard(groups: list[Group], sse: int, n: int) -> list[Group]:
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


def reference_plan(
    sizes: Sequence[int],
    target: int,
    tolerance: float = 0,
    preserve_order: bool = False,
    *,
    near_target: float = NEAR_TARGET_FRACTION,
) -> Plan:
    """``plan_partition`` as it was: same arguments, the plan it gave."""
    if not 0 < near_target <= 1:
        raise ValueError(f"near_target must be in (0, 1], got {near_target}")
    stats = stats_from_sizes(sizes, target)
    chosen: list[Group] = []
    if stats.needs_work(tolerance):
        limit = near_target * target
        groups = candidates = candidate_groups(sizes, target, limit, preserve_order)
        if tolerance > 0:
            tol_sq = tolerance * tolerance
            essential = _essential(groups, stats.sse, stats.n, tol_sq)
            if essential is not None and not preserve_order:
                small = _smallest_first(sizes, target, limit, stats.sse, stats.n, tol_sq)
                if small is not None and sum(g.total for g in small) < sum(
                    g.total for g in essential
                ):
                    essential = small
            groups = groups if essential is None else essential
        chosen = _guard(groups, stats.sse, stats.n)
        if not preserve_order:
            spread = balanced(chosen, sizes, target)
            fewer = folded(spread, sizes, target, limit, stats, candidates)
            chosen_outputs = sum(g.outputs for g in chosen)
            if sum(g.outputs for g in spread) < chosen_outputs:
                same = folded(
                    balanced(chosen, sizes, target, fewer=False),
                    sizes,
                    target,
                    limit,
                    stats,
                    candidates,
                )
                n, n_same = (stats.n - sum(g.removed for g in p) for p in (fewer, same))
                mse = (stats.sse - sum(g.gain for g in fewer)) / n
                mse_same = (stats.sse - sum(g.gain for g in same)) / n_same
                tol_sq = tolerance * tolerance
                lost = tol_sq > 0 and mse_same < tol_sq <= mse
                if n >= n_same or mse > stats.mse or lost:
                    fewer = same
            chosen = fewer
    chosen.sort(key=lambda g: g.members[0])
    return Plan(
        target=target,
        groups=[list(g.members) for g in chosen],
        predicted_outputs=[predict_output_sizes(g.total, target) for g in chosen],
        files_before=stats.n,
        files_after=stats.n - sum(g.removed for g in chosen),
        sse_before=stats.sse,
        sse_after=stats.sse - sum(g.gain for g in chosen),
        bytes_rewritten=sum(g.total for g in chosen),
    )
