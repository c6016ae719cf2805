"""The layout side of planning (``icefloe.jobs.base.layout``): files in key order, the least
re-sort, and the rule a rewrite's real depth must meet before it is committed."""

from __future__ import annotations

import pytest

from icefloe.base.layoutspec import LayoutSpec
from icefloe.jobs.base.layout import depth_allows, key_order, layout_groups

SPEC = LayoutSpec("sort", ("ts",), (1,), ("long",), 1.25)


def test_files_are_taken_by_lower_bound_unbounded_first_then_path() -> None:
    paths = ["c", "a", "b", "d"]
    bounds = {"c": ((10,), (19,)), "a": ((30,), (39,)), "b": ((None,), (5,)), "d": (None, None)}
    assert [paths[i] for i in key_order(paths, bounds, SPEC)] == ["b", "d", "c", "a"]
    assert key_order(["x", "y"], {}, SPEC) == [0, 1]  # no bounds known: by path


def test_zordered_files_are_taken_by_their_lower_corner_s_interleaved_key() -> None:
    spec = LayoutSpec("zorder", ("x", "y"), (1, 2), ("long", "long"), 1.25)
    # (x, y) lower corners (1, 0), (0, 1), (0, 0): keys interleave x's bit above y's
    bounds = {"p": ((1, 0), (1, 0)), "q": ((0, 1), (0, 1)), "r": ((0, 0), (1, 1))}
    assert [["p", "q", "r"][i] for i in key_order(["p", "q", "r"], bounds, spec)] == ["r", "q", "p"]


def test_only_the_late_file_and_the_file_it_overlaps_are_re_sorted() -> None:
    paths = ["r0", "r1", "r2", "late"]
    bounds = {
        "r0": ((0,), (99,)),
        "r1": ((100,), (199,)),
        "r2": ((200,), (299,)),
        "late": ((150,), (180,)),
    }
    got = layout_groups(paths, [1000] * 4, bounds, SPEC, 1000)
    assert got.groups == (("r1", "late"),)
    assert got.before.mean == pytest.approx(6 / 4) and got.after.mean <= SPEC.tolerance
    in_order = layout_groups(paths[:3], [1000] * 3, bounds, SPEC, 1000)
    assert in_order.groups == () and in_order.before.mean == 1.0


@pytest.mark.parametrize(
    ("before", "after", "relayout", "allowed"),
    [
        (2.0, 1.0, True, True),  # a re-sort that lowers the depth
        (2.0, 2.0, True, False),  # ... or leaves it (ties no sort separates): not committed
        (3.39, 3.38, True, False),  # #47: other cuts of the same rows: not worth a commit
        (3.39, 3.17, True, True),  # a tenth of the excess over the tolerance (2.14) removed
        (1.1, 1.09, True, True),  # within the tolerance (a requested re-sort): any decrease
        (1.0, 1.25, False, True),  # a merge may reach the tolerance
        (1.0, 1.5, False, False),  # ... not pass it
        (1.5, 1.5, False, True),  # ... nor make a deep partition deeper
        (1.5, 1.6, False, False),
    ],
)
def test_what_a_rewrite_may_do_to_the_depth(
    before: float, after: float, relayout: bool, allowed: bool
) -> None:
    assert depth_allows(before, after, 1.25, relayout) is allowed
