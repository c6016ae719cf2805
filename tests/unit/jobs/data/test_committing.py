"""The last guard before a commit: files no better than their inputs are never committed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.jobs.data.committing import worth_committing
from icefloe.optimizer import predict_output_sizes, stats_from_sizes

pytestmark = pytest.mark.unit

T = 1000


def test_a_one_to_one_rewrite_is_not_worth_committing() -> None:
    """The churn case seen with early-rolling writers: two files rewritten as the same two."""
    before = [600, 590, 130]
    assert not worth_committing(before, stats_from_sizes(before, T).sse, T)
    assert not worth_committing(before, stats_from_sizes([600, 590, 65, 65], T).sse, T)


def test_a_real_merge_is_worth_committing() -> None:
    before = [600, 300, 100, 50]
    assert worth_committing(before, stats_from_sizes([600, 450], T).sse, T)


@given(st.lists(st.integers(1, T - 1), min_size=2, max_size=30))
def test_merging_everything_under_target_is_worth_it_iff_the_sse_drops(sizes: list[int]) -> None:
    after = predict_output_sizes(sum(sizes), T)
    expected = stats_from_sizes(after, T).sse < stats_from_sizes(sizes, T).sse
    assert worth_committing(sizes, stats_from_sizes(after, T).sse, T) is expected
