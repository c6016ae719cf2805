"""Knuth-Plass style line breaking of an ordered file list, minimising Σ error².

When a table is sorted, only *consecutive* files may be merged (merging across a gap
would interleave key ranges). Like words in a paragraph, the files are broken into runs;
each run becomes one output file whose error is ``(T - run_bytes)²``, and we minimise the
sum over runs: ``dp[j] = min_i dp[i] + (T - (S_j - S_i))²`` over prefix sums ``S``.

Window bound: a run may total at most what one output file holds (``one_file_max``:
just under 1.1·T, Iceberg's fold of a remainder; a run of one file is always allowed: the
file simply stays as it is). Every run is then exactly one output file, and the cost
``w(i, j)`` (``(T - run_bytes)²``, 0 from ``T`` on) is a convex function of the run's
bytes, so it satisfies the quadrangle inequality (``w(a,c) + w(b,d) <= w(a,d) + w(b,c)``,
also with the +inf of over-full runs). Hence decisions are monotone: once a later break
candidate beats an earlier one for some ``j`` it beats it for every larger ``j``. A queue
of candidates, each owning an interval of ``j`` found by binary search, then gives
O(n log n) regardless of how many tiny files fit in a window, which the plain O(n·w)
window DP cannot promise for a partition of 100,000 one-megabyte files. Runs of several
output files would need the output count's sawtooth cost, which is not convex; they are
deliberately not considered.

Files at or above ``limit`` are barriers: they are never merged and split the list into
independent segments.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from icefloe.optimizer.entropy import one_file_max


def runs_sse(sizes: Sequence[int], target: int, runs: Sequence[tuple[int, int]]) -> int:
    """Σ over runs ``[start, end)`` of ``(T - min(run_bytes, T))²``."""
    total = 0
    for start, end in runs:
        e = target - min(sum(sizes[start:end]), target)
        total += e * e
    return total


def _segment_breaks(sizes: Sequence[int], lo: int, hi: int, target: int) -> list[int]:
    """Optimal break positions (absolute, excluding ``lo``) of ``sizes[lo:hi]``."""
    most = one_file_max(target)
    n = hi - lo
    prefix = [0] * (n + 1)
    acc = 0
    for k in range(n):
        acc += sizes[lo + k]
        prefix[k + 1] = acc
    inf = math.inf
    dp: list[float] = [0] * (n + 1)
    parent = [0] * (n + 1)

    def value(i: int, j: int) -> float:
        run = prefix[j] - prefix[i]
        if run > most and j - i > 1:
            return inf
        e = target - run if run < target else 0
        return dp[i] + e * e

    cand = [0]  # break candidates; cand[k] is best for j in [start[k], start[k+1])
    start = [1]
    head = 0
    for j in range(1, n + 1):
        while head + 1 < len(cand) and start[head + 1] <= j:
            head += 1
        i = cand[head]
        dp[j] = value(i, j)
        parent[j] = i
        if j == n:
            break
        while len(cand) > head:  # insert j as a candidate for positions > j
            k = cand[-1]
            first = max(start[-1], j + 1)
            if value(j, first) <= value(k, first):
                cand.pop()
                start.pop()
                continue
            low, high = first + 1, n + 1
            while low < high:  # first position where j beats k (n + 1: never)
                mid = (low + high) // 2
                if value(j, mid) <= value(k, mid):
                    high = mid
                else:
                    low = mid + 1
            if low <= n:
                cand.append(j)
                start.append(low)
            break
        else:
            cand.append(j)
            start.append(j + 1)
    breaks: list[int] = []
    j = n
    while j > 0:
        breaks.append(lo + j)
        j = parent[j]
    breaks.reverse()
    return breaks


def best_runs(sizes: Sequence[int], target: int, limit: int | None = None) -> list[tuple[int, int]]:
    """Split ``sizes`` into consecutive runs ``[start, end)`` minimising Σ error².

    Runs of two or more files total at most what one output file holds (``one_file_max``);
    files ``>= limit`` (default ``target``) are barriers kept as runs of their own. The
    runs cover every index in order. Among optimal solutions the one found is
    deterministic.
    """
    if target <= 0:
        raise ValueError(f"target must be > 0, got {target}")
    barrier = target if limit is None else min(limit, target)
    runs: list[tuple[int, int]] = []
    seg_start = 0
    n = len(sizes)
    for k in range(n + 1):
        if k < n and sizes[k] < 0:
            raise ValueError(f"sizes must be >= 0, got {sizes[k]} at index {k}")
        if k == n or sizes[k] >= barrier:
            if seg_start < k:
                prev = seg_start
                for b in _segment_breaks(sizes, seg_start, k, target):
                    runs.append((prev, b))
                    prev = b
            if k < n:
                runs.append((k, k + 1))
            seg_start = k + 1
    return runs
