"""Every caller of the one verdict (``icefloe.optimizer.verdict.partition_verdict``) agrees with it,
on any partition and policy (property-based): the decider's queue items and waiting set, its
layout items, ``status`` (from kept state in memory stores), ``tables``/``plan``
(``icefloe.base.verdicts.files_verdict``, from the files) and ``plan``'s own gate (a plan
with groups exactly where the ad-hoc verdict merges)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyiceberg.types import LongType

from icefloe.base.config import PlanInputs, TablePolicy
from icefloe.base.layoutspec import LayoutSpec, key_sizes
from icefloe.base.tablestats import PartitionFiles
from icefloe.base.verdicts import files_verdict, layout_of, rules_of
from icefloe.jobs.base.plan import _plan_partition
from icefloe.optimizer import stats_from_sizes
from icefloe.optimizer.layout import FileBounds
from icefloe.optimizer.verdict import Rules, merge_verdict, partition_verdict
from icefloe.service.decider.layout import layout_items
from icefloe.service.decider.needs import partition_items, waiting
from icefloe.service.observe.kept import kept_verdicts
from icefloe.state.layout import signature, spec_of
from icefloe.state.layout.memory import MemoryLayouts

pytestmark = [pytest.mark.unit]

T = 1000
SORT = LayoutSpec("sort", ("k",), (2,), (LongType(),), 1.25)

policies = st.builds(
    lambda actions, tol, floor, enabled, clustering: TablePolicy(
        target_file_size_bytes=T,
        tolerance_bytes=tol,
        min_input_files=floor,
        enabled=enabled,
        actions=actions,
        sort_order=("k",),
        clustering_tolerance=clustering,
    ),
    st.sampled_from([("merge",), ("merge", "sort"), ("sort",), ("rewrite_manifests",)]),
    st.sampled_from([0, T // 4, T // 3, T // 2]),
    st.integers(2, 6),
    st.booleans(),
    st.sampled_from([1.0, 1.25, 2.0]),
)
# a partition's files: (size, low key, width) -- in any key order, overlapping or not
partitions = st.lists(
    st.tuples(st.integers(1, 2 * T), st.integers(0, 50), st.integers(0, 20)),
    min_size=1,
    max_size=7,
)


def _files(spec: list[tuple[int, int, int]]) -> list[FileBounds[str]]:
    return [FileBounds(f"f{i}", s, (lo,), (lo + w,)) for i, (s, lo, w) in enumerate(spec)]


def _pf(files: list[FileBounds[str]]) -> PartitionFiles:
    return PartitionFiles(
        "p",
        0,
        tuple(f.id for f in files),
        tuple(f.size for f in files),
        (1,) * len(files),
        0,
        bounds=tuple((f.lower, f.upper) for f in files),
    )


def _rules(policy: TablePolicy, layout: LayoutSpec | None) -> Rules:
    return rules_of(PlanInputs(policy, T, policy.tolerance_bytes, policy.min_input_files), layout)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies, spec=partitions, laid_out=st.booleans())
@example(  # small files filling a target, no run of neighbours: waits by the sums
    policy=TablePolicy(
        target_file_size_bytes=T,
        tolerance_bytes=0,
        min_input_files=3,
        actions=("merge", "sort"),
        sort_order=("k",),
        clustering_tolerance=1.0,
    ),
    spec=[(739, 0, 0), (750, 0, 0), (262, 0, 0)],
    laid_out=True,
)
def test_every_caller_agrees_with_the_verdict(
    policy: TablePolicy, spec: list[tuple[int, int, int]], laid_out: bool
) -> None:
    # the layout the decider keeps: the policy's clustering tolerance (``layout_spec``)
    layout = None
    if laid_out and "sort" in policy.actions:
        layout = replace(SORT, tolerance=policy.clustering_tolerance)
    rules = _rules(policy, layout)
    files = _files(spec)
    stats = stats_from_sizes([f.size for f in files], T)
    sizes = key_sizes(files) if layout is not None else None
    facts = layout_of(layout, files, T) if layout is not None else None
    want = partition_verdict(rules, stats, sizes, facts)

    # tables, plan --json, the dashboard: from the files
    assert files_verdict(rules, _pf(files), layout)[1] == want

    # the decider: its merge items (sizes in key order) and layout items, its waiting set
    ordered = None if layout is None else (lambda keys: {k: sizes for k in keys})
    items = partition_items("db.t", rules, 1, {"p": stats}, 0.0, ordered=ordered)
    merge = partition_verdict(rules, stats, sizes)
    assert [(i.action, i.reason) for i in items] == (
        [] if merge.action is None else [(merge.action, merge.reason)]
    )
    if layout is not None:
        relayout = layout_items("db.t", rules, 1, layout, {"p": files}, 0.0)
        acted = {i.action for i in items} | {i.action for i in relayout}
        assert acted == (set() if want.action is None else {want.action})
    else:
        assert [i.action for i in items] == ([] if want.action is None else [want.action])
    # what waits is kept from the rolling stats alone (their sums: the key order is read
    # only when it is decided again, after max_wait_hours)
    sums = partition_verdict(rules, stats)
    held, _ = waiting(rules, {"p": stats})
    assert ("p" in held) == (
        sums.waiting or (sums.action == rules.rewrite and stats.small_files < rules.min_input_files)
    )

    # status: from the kept stats and the kept file bounds (it lists the partitions acted
    # on or held: why nothing is done is not worked out for the others)
    kept = _kept_verdict(rules, stats, files, layout)
    assert kept == want if want.state != "none" else kept.state == "none"


def _kept_verdict(rules: Rules, stats: Any, files: list[FileBounds[str]], layout: Any) -> Any:
    store = MemoryLayouts()
    if layout is not None:
        store.replace("db.t", signature(layout), {"p": files})
    spec = None if layout is None else spec_of(signature(layout), rules.clustering_tolerance)
    return kept_verdicts(store, "db.t", rules, {"p": stats}, spec)["p"]


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 2 * T), min_size=1, max_size=8), floor=st.integers(2, 6))
def test_plan_s_gate_is_the_verdict(sizes: list[int], floor: int) -> None:
    """``plan`` leaves a partition alone with the verdict's reason exactly when the verdict
    says nothing now (over tolerance² or not, waiting or not), and plans groups where it
    merges."""
    files = _files([(s, i * 100, 10) for i, s in enumerate(sizes)])
    pf = _pf(files)
    for tolerance in (0, T // 3):
        plan = _plan_partition(pf, T, tolerance, "merge", {}, {}, min_input_files=floor)
        rules = Rules(True, frozenset({"merge"}), T, tolerance, floor)
        verdict = merge_verdict(rules, stats_from_sizes(sizes, T))
        assert bool(plan.groups) == (verdict.action is not None), (sizes, tolerance, plan.reason)
        if verdict.action is None and (
            "min_input_files" in verdict.reason or "<" in verdict.reason
        ):
            assert plan.reason == verdict.reason
