"""First Fit Decreasing bin packing in O(n log n), knowing nothing about files or tables.

Items are sorted by weight, largest first, and each goes into the first (oldest) bin that
still has room for it, or opens a new bin. FFD never uses more than ``11/9 · OPT + 6/9``
bins (Dósa, 2007), and on the many-small-items shapes of streaming ingest its bins come
out nearly full, which is what a merge planner wants.

"First bin with room" is found with a max-tree over the opened bins' free capacity: if
the root says no bin has room, open a new one (O(1) plus a short climb); otherwise descend
to the leftmost leaf whose free space is >= the item, subtract, and repair the maxima on
the way up, stopping early once a maximum no longer changes. The tree only needs as many
leaves as there can be bins: in a first-fit packing at most one bin is at most half full,
so ``bins <= 2 · total / capacity + 1``, which keeps the tree shallow for tiny files.

The minimum-replacement rules that turn bins into rewrites (a lone file is not rewritten,
near-target files are not packed) live in ``planner``; this module only packs.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

__all__ = ["balance", "first_fit_decreasing"]


def first_fit_decreasing(weights: Sequence[int], capacity: int) -> list[list[int]]:
    """Pack item indices into bins of ``capacity`` by First Fit Decreasing.

    Returns the bins in the order they were opened; each bin lists item indices in the
    order they were placed (decreasing weight, ties by index). An item heavier than
    ``capacity`` gets a bin of its own (placed after the others). Deterministic.
    """
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
            while node and tree[node] < value:  # maxima only grow here
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
        while node:  # repair maxima; stop once a node's maximum is unchanged
            left = tree[2 * node]
            right = tree[2 * node + 1]
            best = left if left >= right else right
            if tree[node] == best:
                break
            tree[node] = best
            node //= 2
    return bins + oversized


def balance(weights: Sequence[int], bins: int) -> list[list[int]]:
    """Spread item indices over ``bins`` bins as evenly as possible (LPT).

    Longest Processing Time first: items heaviest first, each into the currently
    lightest bin (ties: the lowest bin). Its heaviest bin is within ``4/3`` of the best
    possible, and with many light items the loads come out nearly equal. No capacity:
    callers check what they need. Deterministic; O(n log n).
    """
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
