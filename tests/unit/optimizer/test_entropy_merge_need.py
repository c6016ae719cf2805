"""The decider's verdict from rolling stats against the planner's, from the files.

The decider sees only a partition's sums (``merge_need``, ``merge_estimate``); the actor
plans from the file sizes (``plan_partition``) under the same gate (over tolerance², at
least ``floor`` small files or small files that fill a target). An item the plan then
refuses is a wasted round trip; a partition the plan would improve but the decider never
queues stays as it is. The two must agree on every unordered partition: exhaustively over
small targets, and on rolling stats (built by deltas, not by a scan) for any target.
"""

from __future__ import annotations

from itertools import combinations_with_replacement

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import (
    apply_delta,
    is_small,
    merge_estimate,
    merge_need,
    plan_partition,
    predict_output_sizes,
    stats_from_sizes,
)

pytestmark = pytest.mark.unit


def planner_merges(sizes: list[int], target: int, tolerance: int, floor: int) -> bool:
    """The actor's answer (``icefloe.jobs.base.plan._plan_partition``'s gate, then the plan)."""
    stats = stats_from_sizes(sizes, target)
    if not stats.needs_work(tolerance):
        return False
    if stats.small_files < floor and not stats.fills_target(target):
        return False
    return bool(plan_partition(sizes, target, tolerance).groups)


@pytest.mark.parametrize(("target", "most"), [(8, 6), (12, 5)])
def test_the_verdict_agrees_with_the_plan_on_every_small_partition(target: int, most: int) -> None:
    """Every multiset of up to ``most`` files of 1..T+2 bytes, three tolerances, two floors."""
    checked = 0
    for n in range(1, most + 1):
        for sizes in combinations_with_replacement(range(1, target + 3), n):
            files = list(sizes)
            stats = stats_from_sizes(files, target)
            for tolerance in (0, target // 3, target // 2):
                for floor in (2, 5):
                    verdict = merge_need(stats, target, tolerance, floor)
                    planned = planner_merges(files, target, tolerance, floor)
                    assert (verdict == "merge") == planned, (files, tolerance, floor)
                    if verdict == "wait":  # it waits for what the plan would merge at floor 2
                        assert planner_merges(files, target, tolerance, 2), files
                    checked += 1
    assert checked > 10_000


@pytest.mark.parametrize("target", [40, 64])
def test_the_verdict_agrees_with_the_plan_on_every_pair_and_triple(target: int) -> None:
    """Where one file holds up to 1.1·T (4 bytes more at T = 40, 6 at T = 64; none at the
    exhaustive test's targets): every pair and triple of small files, alone or beside a
    full file. Bins of 1.1·T once paired 400 + 690 and left 10 alone (T = 1000), and the
    MSE guard then dropped the only group the verdict had promised."""
    small = range(1, -(-3 * target // 4))
    for n in (2, 3):
        for sizes in combinations_with_replacement(small, n):
            for files in (list(sizes), [*sizes, target]):
                stats = stats_from_sizes(files, target)
                for tolerance in (0, target // 3):
                    verdict = merge_need(stats, target, tolerance, 2)
                    assert (verdict == "merge") == planner_merges(files, target, tolerance, 2), (
                        files,
                        tolerance,
                    )


@settings(max_examples=400, deadline=None, database=None)
@given(
    st.integers(1, 5000),
    st.lists(st.integers(0, 6000), min_size=1, max_size=30),
    st.lists(st.integers(0, 6000), max_size=10),
    st.data(),
)
def test_the_verdict_from_rolling_stats_agrees_with_the_plan(
    target: int, kept: list[int], added: list[int], data: st.DataObject
) -> None:
    """Stats kept by a delta (some files added, some deleted) give the plan's answer."""
    gone = data.draw(st.lists(st.sampled_from(kept), max_size=len(kept), unique_by=id))
    rolled = apply_delta(stats_from_sizes(kept, target), target, added, gone)
    after = list(kept)
    for size in gone:
        after.remove(size)
    after += added
    assert rolled == stats_from_sizes(after, target)
    tolerance = data.draw(st.sampled_from([0, target // 4, target // 3, target // 2]))
    floor = data.draw(st.integers(2, 6))
    verdict = merge_need(rolled, target, tolerance, floor)
    assert (verdict == "merge") == planner_merges(after, target, tolerance, floor), after


def test_cases_the_sum_estimate_got_wrong() -> None:
    """Found by comparing the earlier estimate (all undersized files, one rolling writer)
    with the plan on random partitions (T = 1000, no tolerance, floor 2)."""
    t = 1000
    for sizes, merged in [
        ([394, 720, 751], False),  # a 751 is never packed; 394 + 720 > 1.1·T: two files
        ([394, 649, 751], True),  # 394 + 649 = 1.043·T: one file, the remainder folded in
        ([730, 740, 745, 777], False),  # no two small ones fit in one file; three: 3 files
        ([697, 704, 723, 777, 802], True),  # three small ones hold 2.124·T: two files
        ([330, 330, 341], True),  # the planner writes 500 + 501, not 1000 + 1
        ([31, 518, 745], True),  # 31 + 518 in one file
        ([336, 352, 356], True),
        ([10, 400, 690], True),  # 10 + 690 in one file (not 400 + 690, leaving 10 alone)
    ]:
        verdict = merge_need(stats_from_sizes(sizes, t), t, 0, 2)
        assert (verdict == "merge") is merged is planner_merges(sizes, t, 0, 2), sizes


@settings(max_examples=200, deadline=None, database=None)
@given(st.integers(4, 4000), st.lists(st.integers(0, 5000), min_size=1, max_size=25))
def test_the_estimate_rewrites_the_small_files_bytes(target: int, sizes: list[int]) -> None:
    """The estimated bytes are the small files' bytes, an upper bound of what the plan
    rewrites (it may leave some out), a benefit only when a merge lowers the SSE."""
    stats = stats_from_sizes(sizes, target)
    cost, benefit = merge_estimate(stats, target)
    if stats.merge_lowers(target):
        assert cost == sum(s for s in sizes if is_small(s, target))
        complete = plan_partition(sizes, target, 0)
        assert complete.bytes_rewritten <= cost
    else:
        assert (cost, benefit) == (0, 0.0)


def test_the_estimate_is_exact_for_equal_small_files() -> None:
    """Equal small files beside full ones: the small files' SSE is known from the sums, and
    the estimate is the merge's MSE reduction exactly."""
    t = 1000
    sizes = [1000, 1200] + [300] * 5
    stats = stats_from_sizes(sizes, t)
    cost, benefit = merge_estimate(stats, t)
    outputs = [1000, 500]  # 1500 bytes: two even files would be near small (0.75·T)
    after = stats_from_sizes([1000, 1200, *outputs], t)
    assert cost == 1500 and benefit == pytest.approx(stats.mse - after.mse)
    assert sum(predict_output_sizes(cost, t)) == sum(outputs)
