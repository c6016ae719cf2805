"""Salted joins and aggregations equal the plain ones, row for row (differential tests).

Random data with NULL keys, duplicate rows on both sides, a hot key on each side, a hot
key missing from the other side; every join type, salting forced so the salted path runs.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from chispa import assert_df_equality

from icefloe.base.errors import UsageError
from icefloe.jobs.skew.aggregate import _plain_expr, salted_aggregate
from icefloe.jobs.skew.salting import plan_salted_join, salted_join
from icefloe.optimizer.skew_stats import HotKeyRules

pytestmark = [pytest.mark.spark, pytest.mark.integration]

HOWS = ["inner", "left", "right", "full", "left_semi", "left_anti"]
LEFT_HOT, RIGHT_HOT, LEFT_ONLY_HOT, RIGHT_ONLY_HOT = 1, 2, 99, 98


def _rows(seed: int, n: int, hot: list[tuple[int, float]], tag: str) -> list[tuple[Any, ...]]:
    rnd = random.Random(seed)
    rows: list[tuple[Any, ...]] = []
    for i in range(n):
        x = rnd.random()
        key: int | None = None
        acc = 0.0
        for k, share in hot:
            acc += share
            if x < acc:
                key = k
                break
        else:
            key = None if rnd.random() < 0.08 else rnd.randrange(3, 40)
        rows.append((key, rnd.randrange(5), f"{tag}{i % 7}"))
    rows += rows[:50]  # exact duplicates
    return rows


@pytest.fixture(scope="module")
def sides(spark: Any) -> tuple[Any, Any]:
    left = spark.createDataFrame(
        _rows(1, 1200, [(LEFT_HOT, 0.35), (LEFT_ONLY_HOT, 0.1), (RIGHT_HOT, 0.02)], "l"),
        "k int, a int, s string",
    )
    right = spark.createDataFrame(
        _rows(2, 500, [(RIGHT_HOT, 0.3), (RIGHT_ONLY_HOT, 0.1), (LEFT_HOT, 0.02)], "r"),
        "k int, b int, t string",
    )
    return left.cache(), right.cache()


def _same(actual: Any, expected: Any) -> None:
    assert actual.columns == expected.columns
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


CASES = [
    (how, side)
    for how in HOWS
    for side in ("left", "right")
    if side == "left" or how not in ("left_semi", "left_anti")
]
BROADCASTABLE = {
    ("inner", "left"),
    ("inner", "right"),
    ("left", "left"),
    ("right", "right"),
    ("left_semi", "left"),
    ("left_anti", "left"),
}


@pytest.mark.parametrize(("how", "side"), CASES)
def test_salted_join_equals_plain_join(sides: tuple[Any, Any], how: str, side: str) -> None:
    left, right = sides
    hot = [LEFT_HOT, RIGHT_HOT, LEFT_ONLY_HOT, RIGHT_ONLY_HOT]
    out, decision = plan_salted_join(
        left,
        right,
        "k",
        how,
        hot_keys=hot,
        salts=5,
        skewed_side=side,
        null_salts=3,
        strategy="salt",
    )
    if how in ("left_semi", "left_anti"):
        assert decision.side == "left"
    assert decision.salted and decision.strategy == "salt", decision
    _same(out, left.join(right, on="k", how=how))


@pytest.mark.parametrize(("how", "side"), CASES)
def test_isolate_and_broadcast_equals_plain_join(
    sides: tuple[Any, Any], how: str, side: str
) -> None:
    left, right = sides
    hot = [LEFT_HOT, RIGHT_HOT, LEFT_ONLY_HOT, RIGHT_ONLY_HOT]
    if (how, side) not in BROADCASTABLE:
        with pytest.raises(UsageError, match="unmatched rows"):
            plan_salted_join(
                left, right, "k", how, hot_keys=hot, salts=5, skewed_side=side, strategy="broadcast"
            )
        auto = plan_salted_join(left, right, "k", how, hot_keys=hot, salts=5, skewed_side=side)
        assert auto[1].strategy == "salt"  # auto falls back to salting
        return
    out, decision = plan_salted_join(left, right, "k", how, hot_keys=hot, salts=5, skewed_side=side)
    assert decision.salted and decision.strategy == "broadcast", decision
    plan = out._jdf.queryExecution().executedPlan().toString()
    assert "Union" in plan and "BroadcastHashJoin" in plan
    _same(out, left.join(right, on="k", how=how))
    small = plan_salted_join(
        left, right, "k", how, hot_keys=hot, salts=5, skewed_side=side, broadcast_rows=1
    )[1]
    assert small.strategy == "salt"  # too many partner rows to broadcast: salt instead


@pytest.mark.parametrize("how", ["right", "full"])
def test_automatic_detection_salts_and_equals_plain(sides: tuple[Any, Any], how: str) -> None:
    left, right = sides
    out, decision = plan_salted_join(
        left, right, "k", how, rules=HotKeyRules(min_share=0.05, median_multiple=3)
    )
    assert decision.salted and decision.side == "left"
    assert LEFT_HOT in decision.salts
    _same(out, left.join(right, on="k", how=how))


@pytest.mark.parametrize("how", ["full", "left_anti"])
def test_multi_column_keys(spark: Any, how: str) -> None:
    rnd = random.Random(7)
    lrows = [
        (
            (0, "x")
            if rnd.random() < 0.4
            else (rnd.choice([None, 1, 2, 3]), rnd.choice(["x", "y", None]))
        )
        + (i,)
        for i in range(600)
    ]
    rrows = [
        ((0, "x") if rnd.random() < 0.1 else (rnd.choice([None, 1, 2]), rnd.choice(["x", "y"])))
        + (i % 9,)
        for i in range(200)
    ]
    left = spark.createDataFrame(lrows, "k int, g string, a int")
    right = spark.createDataFrame(rrows, "k int, g string, b int")
    out, decision = plan_salted_join(
        left,
        right,
        ["k", "g"],
        how,
        hot_keys=[(0, "x"), (2, "y")],
        salts={(0, "x"): 4, (2, "y"): 3},
    )
    assert decision.salted
    _same(out, left.join(right, on=["k", "g"], how=how))


def test_guardrail_runs_plain_join_without_skew(spark: Any) -> None:
    left = spark.range(800).selectExpr("id % 40 as k", "id as a")
    right = spark.range(200).selectExpr("id % 40 as k", "id as b")
    out, decision = plan_salted_join(left, right, "k", "left")
    assert not decision.salted
    _same(out, left.join(right, on="k", how="left"))


def test_bad_input_is_a_usage_error(sides: tuple[Any, Any]) -> None:
    left, right = sides
    with pytest.raises(UsageError, match="cross"):
        salted_join(left, right, "k", how="cross")
    with pytest.raises(UsageError, match="'nope'"):
        salted_join(left, right, "nope")
    with pytest.raises(UsageError, match="positive"):
        salted_join(left, right, "k", hot_keys=[LEFT_HOT], salts=0)
    with pytest.raises(UsageError, match="positive"):
        salted_aggregate(left, "k", {"n": ("count", "*")}, hot_keys=[LEFT_HOT], salts={1: -2})


AGGS = {
    "n": ("count", "*"),
    "na": ("count", "s"),
    "total": ("sum", "a"),
    "lo": ("min", "a"),
    "hi": ("max", "s"),
    "mean": ("avg", "a"),
    "kinds": ("count_distinct", "a"),
}


def test_salted_aggregate_equals_plain(sides: tuple[Any, Any]) -> None:
    left, _ = sides
    plain = left.groupBy("k").agg(*[_plain_expr(f, c).alias(a) for a, (f, c) in AGGS.items()])
    salted = salted_aggregate(left, "k", AGGS, hot_keys=[LEFT_HOT, None], salts=4)
    _same(salted, plain)
    auto = salted_aggregate(left, "k", AGGS, rules=HotKeyRules(min_share=0.05, median_multiple=2))
    _same(auto, plain)
    measured = salted_aggregate(left, "k", AGGS, hot_keys=[LEFT_HOT], partitions=8)
    _same(measured, plain)


def test_salted_aggregate_decimal_average(spark: Any) -> None:
    from pyspark.sql import functions as F

    df = spark.range(900).selectExpr(
        "if(id % 3 = 0, 7, id % 11) as k", "cast(id * 1.37 as decimal(10,2)) as v"
    )
    plain = df.groupBy("k").agg(F.avg("v").alias("m"), F.sum("v").alias("s"))
    salted = salted_aggregate(
        df, "k", {"m": ("avg", "v"), "s": ("sum", "v")}, hot_keys=[7], salts=6
    )
    _same(salted, plain)


@pytest.mark.parametrize("func", ["collect_list", "percentile", "median", "first"])
def test_holistic_aggregates_are_refused(sides: tuple[Any, Any], func: str) -> None:
    left, _ = sides
    with pytest.raises(UsageError, match="cannot be split"):
        salted_aggregate(left, "k", {"x": (func, "a")}, hot_keys=[LEFT_HOT], salts=3)
