"""The default ``clustering_tolerance`` on #47's late-files case (a model-level check; the
bench, ``bench/layout_bench.py --cases late``, measures it on real tables with Spark):
a partition sorted by ``k`` in files of the target size receives 8 late small files whose
keys fall in the top fifth of its range. At the default, the one verdict re-sorts the
overlap at at most half a full re-sort's bytes, and range queries open fewer files than at
the old default (2.0), which only merged the late files in key order, and within 1.25x of
an ideal full re-sort (files tiling the range exactly; a real one is not that even: the
bench compares against Iceberg's own)."""

from __future__ import annotations

import random

import pytest

from icefloe.base.config import TablePolicy
from icefloe.optimizer.entropy import output_count, stats_from_sizes
from icefloe.optimizer.layout import FileBounds
from icefloe.optimizer.layoutplan import plan_layout
from icefloe.optimizer.verdict import Layout, Rules, partition_verdict

pytestmark = [pytest.mark.unit]

T = 1000
SPAN = 12_000  # keys of the partition: 12 in-order files of T, 1000 keys each


def _partition(seed: int) -> list[FileBounds[str]]:
    rng = random.Random(seed)
    files = [FileBounds(f"f{i}", T, (i * 1000,), (i * 1000 + 999,)) for i in range(12)]
    top = int(SPAN * 0.8)
    for j in range(8):  # late files: small, each over a stretch of the top fifth
        lo = rng.randrange(top, SPAN - 300)
        files.append(FileBounds(f"late{j}", T // 20, (lo,), (lo + rng.randrange(100, 300),)))
    return files


def _after(
    files: list[FileBounds[str]], groups: tuple[tuple[str, ...], ...]
) -> list[tuple[int, int]]:
    """Key ranges after a rewrite of ``groups``: each group as ``output_count`` files
    tiling its hull evenly (the layout planner's model); the rest as they are."""
    by_id = {f.id: f for f in files}
    moved = {i for g in groups for i in g}
    out = [(f.lower[0], f.upper[0]) for f in files if f.id not in moved]  # type: ignore[index]
    for g in groups:
        lo = min(by_id[i].lower[0] for i in g)  # type: ignore[index]
        hi = max(by_id[i].upper[0] for i in g)  # type: ignore[index]
        n = output_count(sum(by_id[i].size for i in g), T)
        step = (hi - lo + 1) / n
        out += [(round(lo + k * step), round(lo + (k + 1) * step) - 1) for k in range(n)]
    return out


def _opened(ranges: list[tuple[int, int]], queries: list[tuple[int, int]]) -> int:
    return sum(lo <= qh and ql <= hi for ql, qh in queries for lo, hi in ranges)


def _verdict(
    files: list[FileBounds[str]], tolerance: float
) -> tuple[str | None, tuple[tuple[str, ...], ...], int]:
    """What the verdict does at ``tolerance``: its action, the groups it rewrites, bytes."""
    plan = plan_layout(files, tolerance, T)
    layout = Layout("sort", plan.before, plan.after, plan.bytes_rewritten)
    rules = Rules(
        True,
        frozenset({"merge", "sort"}),
        T,
        T // 3,
        5,
        clustering_tolerance=tolerance,
        sorted=True,
    )
    verdict = partition_verdict(rules, stats_from_sizes([f.size for f in files], T), layout=layout)
    if verdict.reason.startswith("depth"):  # the layout's re-sort
        return verdict.action, plan.groups, plan.bytes_rewritten
    late = tuple(sorted(f.id for f in files if f.size < T))  # else its small files merged
    return (
        verdict.action,
        (late,) if verdict.action else (),
        sum(f.size for f in files if f.size < T),
    )


@pytest.mark.parametrize("seed", range(5))
def test_the_default_tolerance_is_near_a_full_re_sort_at_half_its_bytes(seed: int) -> None:
    default = TablePolicy().clustering_tolerance
    files = _partition(seed)
    rng = random.Random(100 + seed)
    queries = [(lo, lo + 400) for lo in (rng.randrange(0, SPAN - 400) for _ in range(20))]
    total = sum(f.size for f in files)
    n = output_count(total, T)
    full = [(round(k * SPAN / n), round((k + 1) * SPAN / n) - 1) for k in range(n)]
    full_opened = _opened(full, queries)

    action, groups, rewritten = _verdict(files, default)
    opened = _opened(_after(files, groups), queries)
    assert action == "sort" and rewritten <= 0.5 * total
    assert opened <= 1.25 * full_opened

    # the old default: the late files merged in key order, the overlap left for readers
    _, old_groups, _ = _verdict(files, 2.0)
    assert _opened(_after(files, old_groups), queries) > opened
