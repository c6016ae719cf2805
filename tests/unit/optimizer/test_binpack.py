"""First Fit Decreasing: hand-worked packings, a naive reference, the 11/9 bound; LPT.

(``test_planner_reference.py`` checks both against the pre-#21 implementations.)
"""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import first_fit_decreasing
from icefloe.optimizer.binpack import Spread, balance, ffd_packing, lpt_spread

pytestmark = pytest.mark.unit


def naive_ffd(weights: list[int], capacity: int) -> list[list[int]]:
    """The textbook O(n²) FFD, to check the tree-based one against."""
    order = sorted(range(len(weights)), key=lambda i: -weights[i])
    bins: list[list[int]] = []
    fill: list[int] = []
    big: list[list[int]] = []
    for i in order:
        if weights[i] > capacity:
            big.append([i])
            continue
        for b, f in enumerate(fill):
            if f + weights[i] <= capacity:
                bins[b].append(i)
                fill[b] += weights[i]
                break
        else:
            bins.append([i])
            fill.append(weights[i])
    return bins + big


def optimal_bins(weights: list[int], capacity: int) -> int:
    """Exact bin packing by DP over subsets: best (bins closed, fill of the open bin)."""
    n = len(weights)
    best: list[tuple[int, int] | None] = [None] * (1 << n)
    best[0] = (1, 0)
    for mask in range(1 << n):
        cur = best[mask]
        if cur is None:
            continue
        for i in range(n):
            if mask & (1 << i):
                continue
            bins, fill = cur
            nxt = (
                (bins, fill + weights[i])
                if fill + weights[i] <= capacity
                else (bins + 1, weights[i])
            )
            old = best[mask | (1 << i)]
            if old is None or nxt < old:
                best[mask | (1 << i)] = nxt
    final = best[(1 << n) - 1]
    assert final is not None
    return final[0] if n else 0


def test_hand_worked_packing() -> None:
    weights = [5, 7, 5, 2, 4, 2, 5, 1, 6]
    # sorted: 7(1) 6(8) 5(0) 5(2) 5(6) 4(4) 2(3) 2(5) 1(7)
    # 7 -> b0; 6 -> b1; 5 -> b2; 5 -> b2 (10); 5 -> b3; 4 -> b1 (10); 2 -> b0 (9);
    # 2 -> b3 (7); 1 -> b0 (10)
    assert first_fit_decreasing(weights, 10) == [[1, 3, 7], [8, 4], [0, 2], [6, 5]]


def test_classic_case_where_ffd_is_not_optimal() -> None:
    # OPT: {56, 29, 14} {53, 31, 16} = 99 + 100. FFD: {56, 31} {53, 29, 16} {14}.
    weights = [56, 53, 31, 29, 16, 14]
    bins = first_fit_decreasing(weights, 100)
    assert optimal_bins(weights, 100) == 2
    assert len(bins) == 3


def test_oversized_and_zero_weights() -> None:
    assert first_fit_decreasing([150, 0, 40, 0, 200], 100) == [[2, 1, 3], [4], [0]]
    assert first_fit_decreasing([], 100) == []
    assert first_fit_decreasing([0, 0], 1) == [[0, 1]]
    with pytest.raises(ValueError):
        first_fit_decreasing([1], 0)
    with pytest.raises(ValueError):
        first_fit_decreasing([-1], 5)


def test_packing_sums_and_a_subset_of_items() -> None:
    weights = [5, 7, 5, 2, 4, 2, 5, 1, 6]
    packing = ffd_packing(weights, 10)
    assert packing.bins == [[1, 3, 7], [8, 4], [0, 2], [6, 5]]
    assert packing.loads == [10, 10, 10, 7]
    assert packing.squares == [49 + 4 + 1, 36 + 16, 25 + 25, 25 + 4]
    # items 8, 0, 6 (weights 6, 5, 5): 6 opens a bin, 5 does not fit beside it, 5 does
    assert ffd_packing(weights, 10, [8, 0, 6]).bins == [[8], [0, 6]]
    with pytest.raises(ValueError, match="at index 1"):  # the position in items
        ffd_packing([5, -1, 3], 10, [2, 1])


def test_many_tiny_items_fill_bins_completely() -> None:
    bins = first_fit_decreasing([1] * 10_000, 512)
    assert [len(b) for b in bins] == [512] * 19 + [10_000 - 19 * 512]


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(st.integers(0, 130), max_size=60), st.integers(1, 120))
def test_matches_the_textbook_algorithm(weights: list[int], capacity: int) -> None:
    bins = first_fit_decreasing(weights, capacity)
    assert bins == naive_ffd(weights, capacity)
    assert sorted(i for b in bins for i in b) == list(range(len(weights)))
    for b in bins:
        assert len(b) == 1 or sum(weights[i] for i in b) <= capacity


@settings(max_examples=250, deadline=None, database=None)
@given(st.lists(st.integers(1, 100), max_size=10), st.integers(100, 160))
def test_never_exceeds_the_ffd_bound(weights: list[int], capacity: int) -> None:
    opt = optimal_bins(weights, capacity)
    assert len(first_fit_decreasing(weights, capacity)) <= 11 / 9 * opt + 6 / 9


def test_balance_by_hand() -> None:
    # heaviest first, each into the lightest bin: 5 -> b0, 4 -> b1, 3 -> b1 (7),
    # 3 -> b0 (8), 2 -> b1 (9)
    assert balance([3, 5, 2, 4, 3], 2) == [[1, 4], [3, 0, 2]]
    assert balance([], 3) == [[], [], []]
    with pytest.raises(ValueError):
        balance([1], 0)
    with pytest.raises(ValueError):
        balance([-1], 1)


def test_lpt_spread_by_hand() -> None:
    # balance([3, 5, 2, 4, 3], 2): 5 -> b0, 4 -> b1, 3 -> b1, 3 -> b0, 2 -> b1
    assert lpt_spread([5, 4, 3, 3, 2], 2, 9) == Spread([0, 1, 1, 0, 1], [8, 9], [2, 3])
    assert lpt_spread([5, 4, 3, 3, 2], 2, 8) is None  # bin 1 would pass 8
    spread = lpt_spread([5, 4, 3, 3, 2], 2)
    assert spread is not None
    assert spread.deal([1, 3, 0, 4, 2]) == [[1, 4], [3, 0, 2]]  # the items, heaviest first
    assert lpt_spread([], 2, 0) == Spread([], [0, 0], [0, 0])
    with pytest.raises(ValueError):
        lpt_spread([1], 0)
    with pytest.raises(ValueError):
        lpt_spread([2, -1], 1)


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.integers(0, 100), max_size=9), st.integers(1, 3))
def test_balance_is_within_lpt_bound_of_the_brute_force_optimum(
    weights: list[int], bins: int
) -> None:
    spread = balance(weights, bins)
    assert len(spread) == bins
    assert sorted(i for b in spread for i in b) == list(range(len(weights)))
    heaviest = max(sum(weights[i] for i in b) for b in spread)
    best = min(
        max(sum(w for w, b in zip(weights, choice, strict=True) if b == k) for k in range(bins))
        for choice in product(range(bins), repeat=len(weights))
    )
    assert heaviest <= 4 / 3 * best + 1e-9
