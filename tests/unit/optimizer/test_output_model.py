"""The output model: each file's bytes once merged, where the rate comes from, the writer's
split, and the planner packing by merged bytes (outputs land at the target, not under it)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import output_count, plan_partition, stats_from_sizes
from icefloe.optimizer.output_model import (
    BytesPerRow,
    OutputSplit,
    bytes_per_row,
    extrapolated_rate,
    group_bytes,
    merged_sizes,
    size_slope,
)

pytestmark = pytest.mark.unit

T = 1_000_000


def test_the_slope_is_what_a_row_costs_past_a_files_fixed_part() -> None:
    rows = [100, 400, 250, 900, 50]
    sizes = [3_000 + 20 * r for r in rows]  # 3 kB a file, 20 B a row
    assert size_slope(sizes, rows) == pytest.approx(20)
    assert size_slope(sizes[:2], rows[:2]) is None  # too few files
    assert size_slope([10, 20, 30], [5, 5, 5]) is None  # one row count: no slope
    assert size_slope([30, 20, 10], [1, 2, 3]) is None  # bigger with fewer rows: no slope
    # never under a quarter of the mean rate, never over it
    noisy = size_slope([1_000, 1_010, 1_020], [10, 100, 1_000])
    assert noisy is not None and noisy == pytest.approx(0.25 * 3_030 / 1_110)


def test_rate_from_rewrites_then_full_files_then_the_slope() -> None:
    rows = [100, 400, 250]
    sizes = [3_000 + 20 * r for r in rows]
    full = ([*sizes, 800_000], [*rows, 40_000])
    assert bytes_per_row([(50, 5), (30, 1)], *full, T) == BytesPerRow(80 / 6, "rewrites")
    assert bytes_per_row([(0, 0)], *full, T) == BytesPerRow(20.0, "full files")
    slope = bytes_per_row([], sizes, rows, T)
    assert slope is not None and slope.source == "slope" and slope.value == pytest.approx(20)
    assert bytes_per_row([], [5], [1], T) is None
    many = [(10, 1)] * 5 + [(1_000, 1)]  # only the newest five count
    assert bytes_per_row(many, [], [], T) == BytesPerRow(10.0, "rewrites")


def test_merged_sizes_are_rows_at_the_rate_within_one_and_the_size() -> None:
    rate = BytesPerRow(10.0, "slope")
    assert merged_sizes([500, 50, 7], [30, 10, 0], rate) == [300, 50, 1]
    assert merged_sizes([500, 50], [30, 10], None) == [500, 50]
    with pytest.raises(ValueError, match="bytes per row"):
        BytesPerRow(0.0, "slope")


def test_the_split_follows_the_bytes_written() -> None:
    split = OutputSplit(rows=1_000, predicted=4 * T, target=T, files=4)
    assert split.files == 4 and split.next_rows() == 250
    split.wrote(250, T // 4)  # a quarter of the predicted bytes: the rest is 0.75·T
    assert split.files == 1 and split.next_rows() == 750
    remainder = OutputSplit(rows=1_300, predicted=13 * T // 10, target=T, files=2)
    assert remainder.files == 2 and remainder.next_rows() == 1_000  # T, then the rest
    remainder.wrote(1_000, T)
    assert remainder.files == 1 and remainder.next_rows() == 300
    even = OutputSplit(rows=10, predicted=0, target=0, files=3)
    assert [even.next_rows()] == [4]
    even.wrote(4, 123)
    assert even.next_rows() == 3  # 6 rows over the 2 locations left
    assert OutputSplit(rows=0, predicted=0, target=T, files=2).next_rows() == 1
    with pytest.raises(ValueError, match="at least one output"):
        OutputSplit(rows=5, predicted=5, target=T, files=0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1_000, T // 10), min_size=2, max_size=120),
    st.floats(0.4, 1.0),
)
def test_streaming_files_that_compress_merge_into_outputs_at_the_target(
    sizes: list[int], ratio: float
) -> None:
    """Small files whose rows take ``ratio`` of their bytes once merged: packed by merged
    bytes, every output but one per partition lands at 0.75·T or more, and the plan reads
    exactly the grouped files' bytes."""
    merged = [max(1, int(s * ratio)) for s in sizes]
    plan = plan_partition(sizes, T, 0, merged=merged)
    outputs = [o for group in plan.predicted_outputs for o in group]
    assert sum(o < 0.75 * T for o in outputs) <= 1
    assert plan.bytes_rewritten == sum(sizes[i] for g in plan.groups for i in g)
    for g, predicted in zip(plan.groups, plan.predicted_outputs, strict=True):
        written = group_bytes([sizes[i] for i in g], [merged[i] for i in g])
        assert sum(predicted) == written and len(predicted) == output_count(written, T)
    after = [s for i, s in enumerate(sizes) if all(i not in g for g in plan.groups)] + outputs
    assert plan.sse_after == stats_from_sizes(after, T).sse


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 2 * T), min_size=1, max_size=60),
    st.integers(0, T // 2),
    st.booleans(),
)
def test_merged_equal_to_sizes_plans_as_before(
    sizes: list[int], tolerance: int, ordered: bool
) -> None:
    """Merged bytes equal to the sizes: the very plan of the size-only model."""
    assert plan_partition(sizes, T, tolerance, ordered, merged=sizes) == plan_partition(
        sizes, T, tolerance, ordered
    )


def test_the_rate_of_a_target_sized_file_from_two_encodings() -> None:
    # a file costs 4 kB and 20 B a row: 1,000 rows take 24 kB, 2,000 take 44 kB
    rate = extrapolated_rate((1_000, 24_000), (2_000, 44_000), 1_004_000)
    assert rate == pytest.approx(20 * 1_004_000 / 1_000_000)  # 50,000 rows in the target
    assert extrapolated_rate((1_000, 24_000), (2_000, 44_000), 40_000) == 22.0  # reached
    assert extrapolated_rate((1_000, 30_000), (2_000, 30_000), T) == 15.0  # no more bytes
    assert extrapolated_rate((1_000, 1_000), (1_000, 1_000), T) == 1.0  # one size


def test_outputs_near_the_small_line_are_not_spread_evenly() -> None:
    """1.51·T of small files: a file near T and the rest, not two of 0.755·T that would both
    be merged again with the next small files."""
    sizes = [T // 20] * 29 + [T // 100 * 6]
    plan = plan_partition(sizes, T, 0)
    outputs = sorted(o for group in plan.predicted_outputs for o in group)
    assert len(outputs) == 2 and outputs[1] >= 0.9 * T and outputs[0] < 0.75 * T
    assert sum(o < 0.75 * T for o in outputs) == 1


def test_a_group_writes_no_less_than_its_largest_input() -> None:
    """Four tiny files whose rows take almost nothing at a target-sized file's rate: still
    merged (the output is predicted at the largest input, not under it, so the merge
    lowers the MSE), and the plan's output is never predicted under that."""
    sizes = [1_455, 1_570, 1_455, 1_455]
    merged = [297, 297, 297, 297]  # 250 rows at 1.19 B a row: sequential ids
    plan = plan_partition(sizes, T, 0, merged=merged)
    assert plan.groups == [[0, 1, 2, 3]] and plan.predicted_outputs == [[1_570]]
    assert group_bytes(sizes, merged) == 1_570 and group_bytes([10, 20], [30, 40]) == 70
