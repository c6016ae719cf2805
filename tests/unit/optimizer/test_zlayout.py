"""Z-order clustering from files' boxes (``icefloe.optimizer.zlayout``): by hand, against a brute
force of the definition, and the files a re-z-order takes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.optimizer.layout import FileBounds
from icefloe.optimizer.zlayout import (
    corner_keys,
    ideal_depths,
    key_ordered,
    plan_zorder,
    zorder_depth,
)
from icefloe.optimizer.zorder import ZORDER_BITS

pytestmark = pytest.mark.unit


def box(name: str, x: tuple[int, int], y: tuple[int, int], size: int = 100) -> FileBounds[str]:
    return FileBounds(name, size, (x[0], y[0]), (x[1], y[1]))


QUADRANTS = [
    box("q0", (0, 49), (0, 49)),
    box("q1", (50, 99), (0, 49)),
    box("q2", (0, 49), (50, 99)),
    box("q3", (50, 99), (50, 99)),
]


def test_depth_by_hand() -> None:
    assert zorder_depth([], 2).mean == 0.0
    assert zorder_depth([box("one", (0, 99), (0, 99))], 2).mean == 1.0
    ideal = zorder_depth(QUADRANTS, 2)  # a value of x meets two files: sqrt(4)
    assert (ideal.mean, ideal.max) == (1.0, 2)
    same = zorder_depth([box(f"s{i}", (0, 99), (0, 99)) for i in range(4)], 2)
    assert (same.mean, same.max) == (2.0, 4)  # every value meets all four: twice the ideal
    strips = [box(f"x{i}", (25 * i, 25 * i + 24), (0, 99)) for i in range(4)]
    assert zorder_depth(strips, 2).mean == (1 + 4) / 2 / 2  # x apart, y all overlapping


def test_the_ideal_follows_the_partition_s_extent() -> None:
    """A z-order splits first on the column that varies over more bits."""
    assert ideal_depths(QUADRANTS, 2) == [2.0, 2.0]  # a square: sqrt(4) each
    wide = [box(f"w{i}", (1024 * i, 1024 * i + 1023), (0, 1023)) for i in range(8)]
    x, y = ideal_depths(wide, 2)  # x over 13 bits, y over 10: three levels of x alone
    assert x == pytest.approx(1.0) and y == pytest.approx(8.0)
    assert zorder_depth(wide, 2).mean == pytest.approx(1.0)  # x strips: what z-order makes
    assert ideal_depths([box("one", (0, 5), (0, 5))], 2) == [1.0, 1.0]
    unbounded = FileBounds("u", 1, (None, 0), (None, 0))
    assert ideal_depths([unbounded, box("b", (0, 9), (0, 0))], 2) == [1.0, 2.0]


def test_no_column_splits_finer_than_its_values() -> None:
    """64 files over a constant column and four values of another, 16 each: as good as a
    z-order of those rows gets (the review's case: it read as 4x too deep)."""
    files = [box(f"{v}-{r}", (7, 7), (v, v)) for v in range(4) for r in range(16)]
    assert ideal_depths(files, 2) == [64.0, 16.0]
    assert zorder_depth(files, 2).mean == 1.0


def test_a_plan_that_would_not_lower_the_depth_is_none() -> None:
    files = [
        box("0", (306, 398), (777, 833)),
        box("1", (374, 847), (169, 194)),
        box("2", (737, 760), (790, 835)),
    ]
    plan = plan_zorder(files, 1.0, 1000, 2)
    assert plan.is_empty or plan.after.mean < plan.before.mean


def test_missing_bounds_reach_everything() -> None:
    open_low = FileBounds("u", 1, (None, 0), (10, 10))
    d = zorder_depth([open_low, box("b", (-5, -1), (0, 10))], 2)
    assert d.max == 2  # unbounded below on x: it meets the file at negative x


def _reference(files: list[FileBounds[str]], columns: int) -> float:
    """The module doc's definition, point by point (every bound is a candidate point)."""
    n = len(files)
    ideal = ideal_depths(files, columns)  # the model; the depths below by brute force
    total = 0.0
    for f in files:
        per_column = []
        for c in range(columns):
            points = {g.lower[c] for g in files} | {g.upper[c] for g in files}  # type: ignore[index]
            inside = [p for p in points if f.lower[c] <= p <= f.upper[c]]  # type: ignore[index, operator]
            per_column.append(
                max(sum(g.lower[c] <= p <= g.upper[c] for g in files) for p in inside)  # type: ignore[index, operator]
            )
        total += sum(d / i for d, i in zip(per_column, ideal, strict=True)) / columns
    return total / n


@st.composite
def boxes(draw: st.DrawFn) -> tuple[list[FileBounds[str]], int]:
    columns = draw(st.integers(1, 3))
    n = draw(st.integers(1, 8))
    out = []
    for i in range(n):
        lo = [draw(st.integers(0, 20)) for _ in range(columns)]
        hi = [a + draw(st.integers(0, 10)) for a in lo]
        out.append(FileBounds(f"f{i}", 1, tuple(lo), tuple(hi)))
    return out, columns


@given(boxes())
def test_depth_is_the_definition(case: tuple[list[FileBounds[str]], int]) -> None:
    files, columns = case
    assert zorder_depth(files, columns).mean == pytest.approx(_reference(files, columns))


def test_a_partition_within_tolerance_is_left_alone() -> None:
    plan = plan_zorder(QUADRANTS, 1.25, 1000, 2)
    assert plan.is_empty and plan.before.mean == 1.0


def test_a_late_file_is_rewritten_with_the_block_it_lands_in() -> None:
    """Four blocks apart in key space; a late file inside the second block: those two."""
    blocks = [box(f"b{i}", (1024 * i, 1024 * i + 1023), (0, 1023)) for i in range(4)]
    late = box("late", (1024 + 100, 1024 + 900), (10, 1000))
    plan = plan_zorder([*blocks, late], 1.1, 1000, 2)
    assert sorted(plan.files) == ["b1", "late"]
    assert plan.before.mean > 1.1 and plan.after.mean == pytest.approx(1.0)
    assert plan.bytes_rewritten == 200


def test_files_all_over_the_space_are_rewritten_together() -> None:
    spread = [box(f"s{i}", (0, 999), (0, 999)) for i in range(6)]
    plan = plan_zorder(spread, 2.0, 1000, 2)
    assert sorted(plan.files) == sorted(f.id for f in spread)


def test_corner_keys_bound_every_row() -> None:
    f = FileBounds("f", 1, (None, 3), (7, None))
    keyed = corner_keys(f, 2)
    assert keyed.lower is not None and keyed.upper is not None
    assert keyed.lower[0] == 0b0101  # x unbounded below: 0; y = 0b11 on the even bits
    assert keyed.upper[0] < 1 << (2 * ZORDER_BITS)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="one value per column"):
        zorder_depth([FileBounds("f", 1, (1,), (2,))], 2)
    with pytest.raises(ValueError, match="tolerance"):
        plan_zorder(QUADRANTS, 0.5, 1000, 2)


def test_key_order_is_by_lower_bound_unbounded_first_then_id() -> None:
    files = [
        FileBounds("c", 1, (5,), (9,)),
        FileBounds("a", 1, (5,), (6,)),
        FileBounds("b", 1, None, (3,)),
        FileBounds("d", 1, (1,), (2,)),
    ]
    assert [files[i].id for i in key_ordered(files)] == ["b", "d", "a", "c"]
    # a z-order's files by the interleaved key of their boxes' lower corners: (0, 1) comes
    # before (1, 0) (the first column's bit is the higher one), both after an unbounded one
    boxes = [
        FileBounds("x", 1, (1, 0), (1, 0)),
        FileBounds("y", 1, (0, 1), (0, 1)),
        FileBounds("z", 1, (None, 0), (0, 0)),
    ]
    assert [boxes[i].id for i in key_ordered(boxes, zorder=2)] == ["z", "y", "x"]
