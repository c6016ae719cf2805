"""The one verdict (``icefloe.optimizer.verdict``) rule by rule: the rewrite a policy gets,
delete compaction past its ratio, the layout's re-sort past the clustering tolerance, the
merge of small files (now, waiting, or not at all), the rules' order (first match wins)
and properties over generated partitions: the merge verdict is ``merge_need``'s answer,
a higher floor or tolerance never makes a partition act that did not.

``test_verdict_callers.py`` checks that every caller agrees with the verdict,
``test_verdict_late_files.py`` the default clustering tolerance on #47's late files.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import stats_from_sizes
from icefloe.optimizer.entropy import PartitionStats, merge_estimate, merge_need
from icefloe.optimizer.layout import Depth
from icefloe.optimizer.verdict import (
    ACT,
    COMPACT_DELETES,
    MERGE,
    NONE,
    NOTHING,
    SORT,
    WAIT,
    ZORDER,
    Layout,
    Rules,
    Verdict,
    deletes_verdict,
    layout_verdict,
    merge_verdict,
    merges_in_order,
    partition_verdict,
    rewrite_action,
)

pytestmark = pytest.mark.unit

T = 1000
RULES = Rules(True, frozenset({MERGE}), T, T // 3, 5)
EVERYTHING = replace(RULES, actions=frozenset({MERGE, SORT, ZORDER, COMPACT_DELETES}))
SMALL6 = stats_from_sizes([100] * 6, T)  # six small files: a merge is due now
SMALL3 = stats_from_sizes([100] * 3, T)  # three: under min_input_files, they wait
FULL = stats_from_sizes([T] * 4, T)  # nothing to do


def deep(
    action: str = SORT,
    before: float = 3.0,
    after: float = 1.0,
    bytes_rewritten: int = 5 * T,
    settled: bool = False,
) -> Layout:
    """A partition clustered ``before`` deep over 10 files whose re-sort leaves ``after``."""
    return Layout(
        action,
        Depth(10, before, int(before) + 1),
        Depth(10, after, int(after) + 1),
        bytes_rewritten,
        settled,
    )


def with_deletes(sizes: list[int], delete_files: int, rows: int, deleted: int) -> PartitionStats:
    return stats_from_sizes(sizes, T, delete_files, (rows, 100 * delete_files, deleted))


# -- the rewrite a policy gets -----------------------------------------------------------


@pytest.mark.parametrize(
    ("actions", "zorder", "sort", "expected"),
    [
        ({MERGE}, False, False, MERGE),
        ({MERGE}, True, True, MERGE),  # neither layout action enabled
        ({MERGE, SORT}, False, True, SORT),
        ({MERGE, SORT}, False, False, MERGE),  # no order to sort by: a plain merge
        ({MERGE, ZORDER}, True, False, ZORDER),
        ({MERGE, ZORDER}, False, True, MERGE),  # z-order named no columns, sort not enabled
        ({MERGE, SORT, ZORDER}, True, True, ZORDER),  # z-order first
        ({MERGE, SORT, ZORDER}, False, True, SORT),
    ],
)
def test_rewrite_action(actions: set[str], zorder: bool, sort: bool, expected: str) -> None:
    assert rewrite_action(frozenset(actions), zorder, sort) == expected
    assert rewrite_action(sorted(actions), zorder, sort) == expected  # any sequence
    rules = replace(RULES, actions=frozenset(actions), zorder=zorder, sorted=sort)
    assert rules.rewrite == expected


def test_a_verdict_s_state_and_dict() -> None:
    assert Verdict(MERGE, "r").state == ACT
    assert Verdict(None, "r", waiting=True).state == WAIT
    assert Verdict(None, "r").state == NONE
    assert Verdict(SORT, "why", cost=3).to_dict() == {"state": ACT, "action": SORT, "reason": "why"}
    assert NOTHING.state == NONE and NOTHING.reason == "table not enabled"


# -- delete compaction ---------------------------------------------------------------------


def test_deletes_are_compacted_from_the_ratio_on() -> None:
    assert deletes_verdict(stats_from_sizes([T, T], T), 0.1) is None  # no delete files
    assert deletes_verdict(with_deletes([T, T], 2, 1000, 99), 0.1) is None  # 9.9%
    due = deletes_verdict(with_deletes([T, T], 2, 1000, 100), 0.1)
    assert due is not None and due.action == COMPACT_DELETES and due.state == ACT
    assert due.cost == 2 * T and due.benefit == 100
    assert due.reason == "2 delete files delete 10.0% of 1000 rows"
    # delete files that delete nothing known (no data rows): never due
    assert deletes_verdict(with_deletes([T], 1, 0, 0), 0.1) is None


# -- the layout ------------------------------------------------------------------------------


def test_a_deep_partition_is_re_sorted_with_its_cost_and_benefit() -> None:
    rules = replace(RULES, actions=frozenset({MERGE, SORT}), sorted=True)
    v = layout_verdict(rules, deep())
    assert (v.action, v.cost, v.depth_after, v.mse_after) == (SORT, 5 * T, 1.0, None)
    assert v.benefit == pytest.approx((3.0 - 1.0) * 10)
    assert v.reason == "depth 3 > 1.25 (max 4) over 10 files"


@pytest.mark.parametrize(
    ("rules", "layout", "reason"),
    [
        (replace(RULES, enabled=False), deep(), "table not enabled"),
        (RULES, deep(), "sort not in the policy's actions"),
        (replace(EVERYTHING, clustering_tolerance=3.0), deep(), "depth 3 <= 3"),
        (EVERYTHING, deep(before=1.25), "depth 1.25 <= 1.25"),  # at the tolerance: in
        (EVERYTHING, deep(settled=True), "depth 3: only icefloe's own rewrites changed it"),
        (EVERYTHING, deep(bytes_rewritten=0), "depth 3 > 1.25, but no re-sort lowers it"),
        # 3.0 -> 2.9: under a tenth of the excess (1.75) removed
        (EVERYTHING, deep(after=2.9), "depth 3 > 1.25, but no re-sort lowers it"),
    ],
)
def test_a_layout_is_left_alone(rules: Rules, layout: Layout, reason: str) -> None:
    v = layout_verdict(rules, layout)
    assert v.action is None and not v.waiting and v.reason.startswith(reason)


def test_the_layout_s_own_action_is_queued() -> None:
    assert layout_verdict(EVERYTHING, deep(ZORDER)).action == ZORDER
    assert layout_verdict(EVERYTHING, deep(SORT)).action == SORT


# -- the merge of small files --------------------------------------------------------------


def test_enough_small_files_are_merged_now() -> None:
    v = merge_verdict(RULES, SMALL6)
    cost, benefit = merge_estimate(SMALL6, T)
    assert (v.action, v.cost, v.benefit, v.min_input_files) == (MERGE, cost, benefit, 5)
    assert cost == 600 and v.mse_after == pytest.approx(max(0.0, SMALL6.mse - benefit))
    assert v.reason == f"mse {SMALL6.mse:.4g} >= tolerance² over 6 files"


def test_fewer_small_files_wait_unless_they_fill_a_target_or_the_floor_drops() -> None:
    v = merge_verdict(RULES, SMALL3)
    assert v.action is None and v.waiting and v.state == WAIT and v.min_input_files == 5
    assert v.reason == "3 small file(s), fewer than min_input_files (5): waits up to 1 h"
    late = merge_verdict(RULES, SMALL3, floor=2)  # waited max_wait_hours: the floor is 2
    assert late.action == MERGE and late.min_input_files == 2
    assert late.reason.endswith(", 3 small after 1 h")
    filling = stats_from_sizes([400, 400, 400], T)  # 1200 bytes of small files: over a target
    now = merge_verdict(RULES, filling)
    assert now.action == MERGE and now.reason.endswith(", 3 small holding a target file")


@pytest.mark.parametrize(
    ("rules", "stats", "reason"),
    [
        (replace(RULES, actions=frozenset({SORT})), SMALL6, "the policy rewrites no small"),
        (RULES, FULL, "MSE 0 < tolerance² (333²)"),
        (RULES, stats_from_sizes([T, 100], T), "1 small file(s), fewer than min_input"),
        # two small files that cannot share one output: nothing gained by merging them
        (
            replace(RULES, tolerance=0, min_input_files=2),
            stats_from_sizes([740, 745], T),
            "no merge of its 2 small file(s) lowers the MSE",
        ),
    ],
)
def test_no_merge(rules: Rules, stats: PartitionStats, reason: str) -> None:
    v = merge_verdict(rules, stats)
    assert v.action is None and not v.waiting and v.reason.startswith(reason)


def test_a_laid_out_table_merges_neighbours_in_key_order_only() -> None:
    sizes = [100, T, 100, T, 100, T, 100, T, 100, T, 100]  # six small ones, none adjacent
    stats = stats_from_sizes(sizes, T)
    assert not merges_in_order(sizes, T, T // 3)
    assert merge_verdict(RULES, stats).action == MERGE  # unordered: one group of six
    v = merge_verdict(RULES, stats, key_sizes=sizes)
    assert v.action is None and v.reason == "no run of neighbours in key order merges"
    neighbours = [T] * 5 + [100] * 6
    assert merges_in_order(neighbours, T, T // 3)
    assert merge_verdict(RULES, stats_from_sizes(neighbours, T), neighbours).action == MERGE


# -- the rules' order ------------------------------------------------------------------------


def test_a_disabled_table_gets_nothing() -> None:
    off = replace(EVERYTHING, enabled=False)
    deletes = with_deletes([100] * 6, 3, 100, 50)
    assert partition_verdict(off, deletes, layout=deep()) is NOTHING


def test_deletes_come_first_then_the_layout_then_the_merge() -> None:
    rules = replace(EVERYTHING, sorted=True)
    deletes = with_deletes([100] * 6, 3, 100, 50)  # due for all three
    assert partition_verdict(rules, deletes, layout=deep()).action == COMPACT_DELETES
    no_compaction = replace(rules, actions=frozenset({MERGE, SORT}))
    relayout = partition_verdict(no_compaction, deletes, layout=deep())
    assert relayout.action == SORT and relayout.depth_after == 1.0  # the layout's re-sort
    settled = partition_verdict(no_compaction, deletes, layout=deep(settled=True))
    assert settled.action == SORT and settled.depth_after is None  # the merge, sorted
    assert partition_verdict(no_compaction, deletes).action == SORT  # the merge, sorted
    assert partition_verdict(RULES, deletes).action == MERGE


def test_a_laid_out_partition_with_nothing_to_do_names_both_reasons() -> None:
    rules = replace(RULES, actions=frozenset({MERGE, SORT}), sorted=True)
    v = partition_verdict(rules, FULL, layout=deep(before=1.0))
    assert v.action is None and v.reason == "MSE 0 < tolerance² (333²); depth 1 <= 1.25"
    waits = partition_verdict(rules, SMALL3, layout=deep(before=1.0))
    assert waits.waiting and waits.reason.endswith("waits up to 1 h")  # a wait says so alone


# -- properties ------------------------------------------------------------------------------

sizes_st = st.lists(st.integers(0, 2 * T), min_size=1, max_size=20)
tolerance_st = st.sampled_from([0, T // 4, T // 3, T // 2])


@settings(max_examples=300, deadline=None, database=None)
@given(sizes_st, tolerance_st, st.integers(1, 8), st.integers(1, 8))
def test_the_merge_verdict_is_merge_need_s_answer(
    sizes: list[int], tolerance: int, min_input_files: int, floor: int
) -> None:
    stats = stats_from_sizes(sizes, T)
    rules = replace(RULES, tolerance=tolerance, min_input_files=min_input_files)
    v = merge_verdict(rules, stats, floor=floor)
    need = merge_need(stats, T, tolerance, floor)
    assert (v.action == MERGE) == (need == "merge") and v.waiting == (need == "wait")
    assert not (v.action and v.waiting)
    if v.action:
        assert (v.cost, v.benefit) == merge_estimate(stats, T)
        assert v.mse_after is not None and 0.0 <= v.mse_after <= stats.mse
    # without deletes or a layout, the one verdict is the merge verdict
    assert partition_verdict(rules, stats, floor=floor) == v


@settings(max_examples=300, deadline=None, database=None)
@given(sizes_st, tolerance_st, tolerance_st, st.integers(1, 8), st.integers(1, 8))
def test_a_higher_floor_or_tolerance_never_makes_a_partition_act(
    sizes: list[int], tol_a: int, tol_b: int, floor_a: int, floor_b: int
) -> None:
    stats = stats_from_sizes(sizes, T)
    low, high = sorted((tol_a, tol_b)), sorted((floor_a, floor_b))
    strict = merge_verdict(replace(RULES, tolerance=low[1]), stats, floor=high[1])
    lax = merge_verdict(replace(RULES, tolerance=low[0]), stats, floor=high[0])
    if strict.action is not None:
        assert lax.action == strict.action
    if strict.waiting:  # what waits under the stricter rules waits or acts under laxer ones
        assert lax.waiting or lax.action is not None


@settings(max_examples=300, deadline=None, database=None)
@given(
    sizes_st,
    st.sampled_from([SORT, ZORDER]),
    st.floats(0.0, 20.0),
    st.floats(0.0, 20.0),
    st.integers(0, 10 * T),
    st.booleans(),
    st.sampled_from([1.0, 1.25, 2.0]),
    st.frozensets(st.sampled_from([MERGE, SORT, ZORDER, COMPACT_DELETES])),
)
def test_any_action_is_the_policy_s_and_a_re_sort_lowers_the_depth(
    sizes: list[int],
    action: str,
    before: float,
    after: float,
    rewritten: int,
    settled: bool,
    tolerance: float,
    actions: frozenset[str],
) -> None:
    stats = stats_from_sizes(sizes, T)
    rules = replace(RULES, actions=actions, clustering_tolerance=tolerance, sorted=True)
    layout = Layout(action, Depth(10, before, 1), Depth(10, after, 1), rewritten, settled)
    v = partition_verdict(rules, stats, key_sizes=sizes, layout=layout)
    assert v.action is None or v.action in actions
    assert not (v.action and v.waiting)
    if v.action in (SORT, ZORDER) and v.depth_after is not None:  # the layout's re-sort
        assert v.action == action and not settled and before > tolerance
        assert after < before and v.cost == rewritten > 0 and v.benefit > 0
