"""Knuth-Plass line breaking: optimal against brute force over every set of break points."""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import best_runs, one_file_max
from icefloe.optimizer.linebreak import runs_sse

pytestmark = pytest.mark.unit


def brute_force_sse(sizes: list[int], target: int, limit: int) -> int:
    """Minimum Σ error² over all 2^(n-1) ways to cut ``sizes`` into consecutive runs."""
    n = len(sizes)
    if n == 0:
        return 0
    best: int | None = None
    for cuts in product((False, True), repeat=n - 1):
        total, start, ok = 0, 0, True
        for end in range(1, n + 1):
            if end < n and not cuts[end - 1]:
                continue
            run = sizes[start:end]
            if len(run) > 1 and (sum(run) > one_file_max(target) or max(run) >= limit):
                ok = False
                break
            e = target - min(sum(run), target)
            total += e * e
            start = end
        if ok and (best is None or total < best):
            best = total
    assert best is not None
    return best


def check_runs(sizes: list[int], target: int, limit: int, runs: list[tuple[int, int]]) -> None:
    assert [a for a, _ in runs] == [0] + [b for _, b in runs[:-1]] if runs else sizes == []
    if runs:
        assert runs[-1][1] == len(sizes)
    for a, b in runs:
        assert b > a
        if b - a > 1:
            assert sum(sizes[a:b]) <= one_file_max(target)
            assert max(sizes[a:b]) < limit


def test_three_halves() -> None:
    assert best_runs([50, 50, 50], 100) in ([(0, 2), (2, 3)], [(0, 1), (1, 3)])


def test_barriers_stay_alone_and_split_segments() -> None:
    sizes = [10, 20, 150, 30, 80, 10, 10]
    runs = best_runs(sizes, 100, limit=75)
    assert (2, 3) in runs and (4, 5) in runs
    check_runs(sizes, 100, 75, runs)
    assert runs_sse(sizes, 100, runs) == brute_force_sse(sizes, 100, 75)


def test_empty_and_invalid() -> None:
    assert best_runs([], 10) == []
    with pytest.raises(ValueError):
        best_runs([1], 0)
    with pytest.raises(ValueError):
        best_runs([1, -1], 10)


def test_order_matters() -> None:
    # FFD would pair 60+40 twice; in this order only neighbours may merge, and
    # 40+40 (error 20², plus 40² twice) beats 60+40 (leaving a 60 and a 40 alone).
    assert best_runs([60, 60, 40, 40], 100) == [(0, 1), (1, 2), (2, 4)]
    assert best_runs([60, 40, 60, 40], 100) == [(0, 2), (2, 4)]


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.integers(0, 120), max_size=12),
    st.integers(1, 100),
    st.integers(1, 130),
)
def test_equals_brute_force(sizes: list[int], target: int, limit: int) -> None:
    runs = best_runs(sizes, target, limit=limit)
    check_runs(sizes, target, min(limit, target), runs)
    assert runs_sse(sizes, target, runs) == brute_force_sse(sizes, target, min(limit, target))


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.integers(1, 9), min_size=8, max_size=12))
def test_equals_brute_force_with_many_tiny_files_per_window(sizes: list[int]) -> None:
    # Windows hold most of the list: stresses the candidate queue, not the barriers.
    runs = best_runs(sizes, 20)
    assert runs_sse(sizes, 20, runs) == brute_force_sse(sizes, 20, 20)


def test_large_partition_of_tiny_files_spreads_the_error_evenly() -> None:
    # 10,000 bytes into runs of at most 512 · 1.1 (one file each): 18 or 19 full runs, no
    # error (at most 512, twenty runs of 500 would leave 20 · 12²).
    runs = best_runs([1] * 10_000, 512)
    assert all(512 <= b - a <= one_file_max(512) for a, b in runs)
    assert runs_sse([1] * 10_000, 512, runs) == 0


def test_a_run_folds_a_remainder_in_up_to_one_output_file() -> None:
    # 54 + 27 + 21 = 102: one file (no sliver); 54 + 27 + 30 = 111 would not be one file.
    assert best_runs([54, 27, 21], 100) == [(0, 3)]
    assert best_runs([54, 27, 30], 100, limit=75) in ([(0, 2), (2, 3)], [(0, 1), (1, 3)])
