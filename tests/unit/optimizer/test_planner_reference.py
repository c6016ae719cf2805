"""The fast planner gives exactly the plans of the straightforward one (``reference_planner``).

#21 made ``plan_partition`` fast (FFD through heaps of pending and eligible bins, LPT in
sorted epochs, groups scored while packing, a spread judged before it is dealt out); none
of it may change a plan. Every test here compares with the pre-#21 code kept in
``reference_planner``: whole plans (the same groups in the same order, the same predicted
stats) and the packers underneath, on small drawn inputs that shrink well and on large
seeded ones whose shapes reach the fast paths (long LPT epochs, bins reopened by
shrinking items), plus the 100,000-file shape of #21 once. No timing: that is the bench's.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import first_fit_decreasing, plan_partition
from icefloe.optimizer.binpack import balance, ffd_packing, lpt_spread
from tests.unit.optimizer import reference_planner as ref

pytestmark = pytest.mark.unit

MB = 1 << 20

# Sizes against a target of 1,000: ties, empty files, near-target, full and oversized ones.
small_sizes = st.lists(
    st.one_of(
        st.integers(0, 1_100),
        st.integers(0, 60),
        st.integers(450, 560),
        st.sampled_from([0, 1, 250, 333, 500, 750, 1_000]),
    ),
    max_size=120,
)


def seeded_sizes(seed: int, shape: str, n: int, target: int) -> list[int]:
    """``n`` file sizes of a named shape, from a seed (hypothesis draws the seed)."""
    rng = random.Random(seed)
    if shape == "uniform":  # many files per bin, loads close together: long LPT epochs
        return [rng.randint(1, target // 3) for _ in range(n)]
    if shape == "log-normal":
        return [
            max(0, min(2 * target, int(rng.lognormvariate(0, 1.5) * target / 16))) for _ in range(n)
        ]
    if shape == "few-values":  # ties everywhere
        return [rng.choice([0, 1, target // 10, target // 4, target // 2 + 1]) for _ in range(n)]
    if shape == "big-then-tiny":  # spread loads, then crumbs: short epochs, heap steps
        return [rng.randint(target // 2, target) for _ in range(n // 8)] + [
            rng.randint(0, target // 500 + 1) for _ in range(n - n // 8)
        ]
    return [rng.randint(0, 2 * target) for _ in range(n)]  # "wide"


SHAPES = ["uniform", "log-normal", "few-values", "big-then-tiny", "wide"]


@settings(max_examples=500, deadline=None, database=None)
@given(
    small_sizes,
    st.sampled_from([0, 100, 250, 400, 1_000]),
    st.booleans(),
    st.sampled_from([0.75, 1.0, 0.5, 0.3]),
)
def test_plans_equal_the_reference(
    sizes: list[int], tolerance: int, preserve_order: bool, near: float
) -> None:
    args = (sizes, 1_000, tolerance, preserve_order)
    assert plan_partition(*args, near_target=near) == ref.reference_plan(*args, near_target=near)


@settings(max_examples=60, deadline=None, database=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(SHAPES),
    st.integers(2, 3_000),
    st.sampled_from([0.0, 0.25, 1 / 3]),
)
def test_large_plans_equal_the_reference(seed: int, shape: str, n: int, tol: float) -> None:
    target = 1 << 20
    sizes = seeded_sizes(seed, shape, n, target)
    tolerance = int(tol * target)
    assert plan_partition(sizes, target, tolerance) == ref.reference_plan(sizes, target, tolerance)


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(st.integers(0, 130), max_size=80), st.integers(1, 120), st.data())
def test_ffd_packing_equals_the_reference(
    weights: list[int], capacity: int, data: st.DataObject
) -> None:
    packing = ffd_packing(weights, capacity)
    assert packing.bins == first_fit_decreasing(weights, capacity)
    assert packing.bins == ref.first_fit_decreasing(weights, capacity)
    assert packing.loads == [sum(weights[i] for i in b) for b in packing.bins]
    assert packing.squares == [sum(weights[i] ** 2 for i in b) for b in packing.bins]
    # a subset in any order packs as the gathered weights would, mapped back
    items = data.draw(st.permutations(range(len(weights))))[: data.draw(st.integers(0, 80))]
    expected = ref.first_fit_decreasing([weights[i] for i in items], capacity)
    assert ffd_packing(weights, capacity, items).bins == [[items[k] for k in b] for b in expected]


@settings(max_examples=60, deadline=None, database=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(SHAPES), st.integers(1, 5_000))
def test_large_ffd_equals_the_reference(seed: int, shape: str, n: int) -> None:
    weights = seeded_sizes(seed, shape, n, 1_000_000)
    assert first_fit_decreasing(weights, 1_000_000) == ref.first_fit_decreasing(weights, 1_000_000)


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(SHAPES),
    st.integers(0, 4_000),
    st.integers(1, 600),
    st.floats(0.5, 1.5),
)
def test_balance_and_lpt_spread_equal_the_reference(
    seed: int, shape: str, n: int, bins: int, headroom: float
) -> None:
    weights = seeded_sizes(seed, shape, n, 1_000_000)
    dealt = balance(weights, bins)
    assert dealt == ref.balance(weights, bins)
    loads = [sum(weights[i] for i in b) for b in dealt]
    capacity = int(headroom * max(loads))  # below the heaviest bin, or at or above it
    spread = lpt_spread(sorted(weights, reverse=True), bins, capacity)
    if max(loads) > capacity:
        assert spread is None
    else:
        assert spread is not None
        assert (spread.loads, spread.counts) == (loads, [len(b) for b in dealt])


def test_the_100k_shape_of_issue_21() -> None:
    """100,000 files of 1 KB-40 MB, 128 MiB target, tolerance 0: #21's timing shape."""
    rng = random.Random(21)
    sizes = [rng.randint(1_000, 40_000_000) for _ in range(100_000)]
    plan = plan_partition(sizes, 128 * MB, 0)
    assert plan == ref.reference_plan(sizes, 128 * MB, 0)
    assert len(plan.groups) > 10_000
