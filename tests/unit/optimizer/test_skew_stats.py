"""The pure skew statistics: outliers, robust measures, hot-key rules, salt counts."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.optimizer.skew_stats import (
    HotKeyRules,
    gini,
    hot_keys,
    makespan,
    salt_count,
    salt_plan,
    sigma_outliers,
    skew_metrics,
    spread_salts,
)

pytestmark = pytest.mark.unit

sizes = st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=60)


def test_sigma_rule_flags_the_giant_partition_only() -> None:
    parts = {f"p{i}": 100 for i in range(20)} | {"big": 5000}
    assert sigma_outliers(parts) == ["big"]


def test_sigma_rule_flags_nothing_on_even_or_tiny_inputs() -> None:
    assert sigma_outliers({"a": 5, "b": 5, "c": 5}) == []
    assert sigma_outliers({"a": 5}) == []
    assert sigma_outliers({}) == []


def test_metrics_of_a_known_distribution() -> None:
    m = skew_metrics([1, 1, 1, 1, 16])
    assert m.median == 1 and m.max == 16 and m.max_over_median == 16
    assert m.mean == 4
    assert math.isclose(m.stddev, statistics.pstdev([1, 1, 1, 1, 16]))
    assert math.isclose(m.cv, m.stddev / 4)
    assert math.isclose(m.gini, 0.6)


def test_metrics_of_nothing_and_of_zeros() -> None:
    assert skew_metrics([]).count == 0
    zeros = skew_metrics([0, 0])
    assert zeros.max_over_median == 0 and zeros.gini == 0 and zeros.cv == 0
    with pytest.raises(ValueError):
        skew_metrics([-1])


@given(sizes)
def test_gini_is_bounded_and_zero_when_even(xs: list[int]) -> None:
    g = gini(xs)
    assert 0 <= g < 1
    assert gini([xs[0]] * len(xs)) == pytest.approx(0.0, abs=1e-12)


@given(sizes, st.integers(min_value=1, max_value=1000))
def test_metrics_are_scale_free(xs: list[int], k: int) -> None:
    a, b = skew_metrics(xs), skew_metrics([x * k for x in xs])
    assert a.cv == pytest.approx(b.cv, rel=1e-9, abs=1e-12)
    assert a.gini == pytest.approx(b.gini, rel=1e-9, abs=1e-12)


def test_hot_keys_need_share_and_median_multiple() -> None:
    counts = [(f"k{i}", 10) for i in range(200)] + [("hot", 3000), ("warm", 90)]
    found = hot_keys(counts, HotKeyRules(min_share=0.01, median_multiple=10))
    assert [h.key for h in found] == ["hot"]
    assert found[0].share == pytest.approx(3000 / 5090)


def test_uniform_keys_are_never_hot_even_with_a_big_share() -> None:
    counts = [(i, 500) for i in range(20)]  # 5% each
    assert hot_keys(counts, HotKeyRules(min_share=0.01, median_multiple=2)) == []


def test_null_key_is_hot_only_when_asked() -> None:
    counts = [(None, 1000), *((i, 1) for i in range(50))]
    assert hot_keys(counts) == []
    assert [h.key for h in hot_keys(counts, null_is_key=True)] == [None]


def test_hot_keys_with_given_totals_and_cap() -> None:
    counts = [(i, 1000 - i) for i in range(10)]
    found = hot_keys(counts, HotKeyRules(max_keys=3), total_rows=50_000, median=1.0)
    assert [h.key for h in found] == [0, 1, 2]
    assert found[0].share == pytest.approx(0.02)


def test_bad_rules_are_rejected() -> None:
    with pytest.raises(ValueError):
        HotKeyRules(min_share=1.5)
    with pytest.raises(ValueError):
        HotKeyRules(max_keys=0)


def test_salt_count_from_target_and_budget() -> None:
    assert salt_count(1000, 100) == 10
    assert salt_count(50, 100) == 1
    assert salt_count(10**9, 1, max_salts=64) == 64
    assert salt_count(1000, 100, other_rows=50, replication_budget=200) == 5
    assert salt_count(1000, 100, other_rows=500, replication_budget=10) == 1


@given(
    st.integers(min_value=0, max_value=10**7),
    st.integers(min_value=1, max_value=10**6),
    st.integers(min_value=0, max_value=10**5),
    st.integers(min_value=0, max_value=10**7),
)
def test_salt_count_respects_the_budget(hot: int, target: int, other: int, budget: int) -> None:
    n = salt_count(hot, target, other, budget)
    assert 1 <= n <= 64
    assert other * (n - 1) <= budget or n == 1


def test_salt_plan_salts_a_real_hot_key() -> None:
    plan = salt_plan(
        {"h": 300_000}, {"h": 10}, total_rows=1_000_000, partitions=200, other_total_rows=1000
    )
    assert plan.worthwhile
    assert plan.salts["h"] == 60
    assert plan.salted_critical_rows < plan.plain_critical_rows


def test_salt_plan_guardrail_without_real_skew() -> None:
    plan = salt_plan(
        {"k": 5000}, {"k": 10}, total_rows=1_000_000, partitions=200, other_total_rows=1000
    )
    assert not plan.worthwhile  # 5000 rows fit one even share: nothing to gain
    assert not salt_plan({}, {}, 100, 4).worthwhile


def test_salt_plan_budget_goes_to_the_biggest_key() -> None:
    plan = salt_plan(
        {"a": 500_000, "b": 400_000},
        {"a": 100, "b": 100},
        1_000_000,
        100,
        replication_budget=1000,
        other_total_rows=10_000,
    )
    assert plan.salts["a"] == 11 and plan.salts["b"] == 1
    assert plan.replicated_rows <= 1000


def test_makespan() -> None:
    assert makespan([5, 1, 1, 1, 1, 1], 2) == 5
    assert makespan([1] * 8, 4) == 2
    assert makespan([], 3) == 0
    with pytest.raises(ValueError):
        makespan([1], 0)


def test_spread_salts_avoids_partition_collisions() -> None:
    # candidate salts 0..7 of key "a" hash to partitions with collisions among the first ones
    partition_of = {"a": [3, 3, 1, 3, 0, 2, 1, 0], "b": [0, 1, 2, 3, 0, 1, 2, 3]}
    chosen = spread_salts(partition_of, {"a": 4, "b": 2}, {"a": 400, "b": 100}, 4)
    assert sorted(partition_of["a"][s] for s in chosen["a"]) == [0, 1, 2, 3]
    assert len(set(chosen["b"])) == 2


@given(st.integers(min_value=1, max_value=20), st.integers(min_value=1, max_value=8))
def test_spread_salts_distinct_partitions_when_possible(n: int, parts: int) -> None:
    partition_of = {"k": [(s * 11 + 3) % parts for s in range(4 * max(n, parts))]}
    chosen = spread_salts(partition_of, {"k": n}, {"k": 1000}, parts)["k"]
    assert len(chosen) == len(set(chosen)) == n
    assert len({partition_of["k"][s] for s in chosen}) == min(n, parts)
