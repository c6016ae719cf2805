"""The layout store: its contract suite in memory (``tests/support/contracts/layout.py``;
``tests/redis/test_layout_redis.py`` runs it on Redis), the bounds codec (a property:
every value round-trips exactly) and the netting of a chain's deltas."""

from __future__ import annotations

import math
import struct
import uuid
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.base.config import PlanInputs, TablePolicy
from icefloe.base.layoutspec import LayoutSpec, rewrite_action
from icefloe.base.verdicts import rules_of
from icefloe.optimizer import PartitionStats, merge_need, stats_from_sizes
from icefloe.optimizer.layout import Depth, FileBounds
from icefloe.optimizer.verdict import partition_verdict
from icefloe.state.layout import (
    LayoutDelta,
    LayoutStore,
    decode_depth,
    decode_file,
    depths,
    encode_depth,
    encode_file,
    net,
    signature,
    zorder_columns,
)
from icefloe.state.layout.memory import MemoryLayouts
from tests.support.contracts.layout import LayoutContract, fb

pytestmark = [pytest.mark.unit]


class TestMemoryLayouts(LayoutContract):
    __test__ = True

    def make_store(self) -> LayoutStore:
        return MemoryLayouts()


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.uuids(),
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.tuples(inner, inner) | st.tuples(inner), max_leaves=6
)
BOUNDS = st.none() | st.lists(VALUES, max_size=4).map(tuple)


def same(a: Any, b: Any) -> bool:
    """Equal, exactly: of one type, floats bit for bit, Decimals digit for digit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return struct.pack(">d", a) == struct.pack(">d", b)
    if isinstance(a, Decimal):
        return str(a) == str(b)
    return bool(a == b)


@given(
    path=st.text(min_size=1), size=st.integers(min_value=0, max_value=2**63), lo=BOUNDS, hi=BOUNDS
)
def test_the_codec_round_trips_every_bound_exactly(
    path: str, size: int, lo: tuple[Any, ...] | None, hi: tuple[Any, ...] | None
) -> None:
    got = decode_file(path, encode_file(FileBounds(path, size, lo, hi)).encode())
    assert got.id == path and got.size == size
    assert same(got.lower, lo) and same(got.upper, hi)


def test_the_codec_rejects_what_it_cannot_keep() -> None:
    with pytest.raises(TypeError, match="bound value of type"):
        encode_file(FileBounds("p", 1, (object(),), None))
    assert same(
        decode_file("p", encode_file(fb("p", math.nan, uuid.UUID(int=5)))).lower, (math.nan,)
    )


def test_a_chain_nets_to_its_effect() -> None:
    chain: dict[str, LayoutDelta] = {}
    net(chain, {"p": LayoutDelta(added={"a": fb("a", 1, 2), "b": fb("b", 3, 4)})})
    net(chain, {"p": LayoutDelta(added={"c": fb("c", 1, 9)}, deleted=["a", "old"])})
    net(chain, {"p": LayoutDelta(added={"old": fb("old", 0, 0)})})  # same path again
    assert chain["p"].added == {"b": fb("b", 3, 4), "c": fb("c", 1, 9), "old": fb("old", 0, 0)}
    assert chain["p"].deleted == ["a"]
    store = MemoryLayouts()
    store.replace("db.t", "sort:id", {"p": [fb("old", 5, 6)]})
    store.update("db.t", "sort:id", chain)
    store.update("db.t", "sort:id", chain)
    assert [f.id for f in store.files("db.t")["p"]] == ["b", "c", "old"]
    d = depths(store.files("db.t"))["p"]
    assert (d.files, d.max) == (3, 2)


def test_one_rule_picks_the_rewrite_of_small_files() -> None:
    """zorder over sort over merge, each only when its columns exist."""
    base = TablePolicy()
    assert rewrite_action(base) == "merge"
    sorts = replace(base, actions=("merge", "sort"))
    assert rewrite_action(sorts) == "merge"  # no order anywhere: a plain merge
    assert rewrite_action(sorts, declared=("ts",)) == "sort"
    assert rewrite_action(replace(sorts, sort_order=("ts",))) == "sort"
    zorders = replace(base, actions=("zorder", "sort"), zorder=("x", "y"), sort_order=("ts",))
    assert rewrite_action(zorders) == "zorder"
    assert rewrite_action(replace(zorders, actions=("merge", "sort"))) == "sort"


def test_one_verdict_on_small_files_for_the_decider_status_and_tables() -> None:
    """The policy's say first (enabled, merges at all), then ``merge_need``."""
    target = 100
    six_small = stats_from_sizes([10] * 6, target)
    two_small = stats_from_sizes([10, 10], target)
    policy = TablePolicy(tolerance_bytes=10, target_file_size_bytes=target)

    def state(p: TablePolicy, stats: PartitionStats, floor: int | None = None) -> str | None:
        verdict = partition_verdict(rules_of(PlanInputs(p, target, 10, 5)), stats, floor=floor)
        return {"act": verdict.action, "wait": "wait", "none": None}[verdict.state]

    assert state(policy, six_small) == "merge"
    assert state(policy, two_small) == "wait"
    assert state(policy, two_small, floor=2) == "merge"
    assert state(replace(policy, enabled=False), six_small) is None
    assert state(replace(policy, actions=("rewrite_manifests",)), six_small) is None
    for stats in (six_small, two_small, stats_from_sizes([10], target)):
        assert state(policy, stats) == merge_need(stats, target, 10, 5)


def test_a_signature_names_its_zorder_columns() -> None:
    spec = LayoutSpec("zorder", ("x", "y", "z"), (1, 2, 3), ("long",) * 3, 2.0)
    assert signature(spec) == "zorder:x,y,z;boxes" and zorder_columns(signature(spec)) == 3
    assert zorder_columns("sort:ts") == 0
    assert zorder_columns("zorder:x,y") == 0  # stored before boxes: read as intervals


@given(st.integers(0, 2**40), st.floats(0, 1e12, allow_nan=False), st.integers(0, 2**40))
def test_a_kept_depth_comes_back_exactly(files: int, mean: float, deepest: int) -> None:
    d = Depth(files, mean, deepest)
    assert decode_depth(encode_depth(d)) == d and decode_depth(encode_depth(d).encode()) == d
