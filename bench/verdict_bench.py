"""Does the decider queue what the actor's plan then merges? Before and after session 20.

    .venv/bin/python bench/verdict_bench.py [--partitions 20000] [--seed 0]

The decider sees only a partition's rolling sums; the actor plans from its files. On
random partitions of five shapes (T = 1000 bytes; the model scales), for the default
tolerance (T/3) and none, and for the default floor (``min_input_files`` 5) and the floor
after ``max_wait_hours`` (2), it counts the partitions the plan merges, those the decider
queued that the plan then refused (a wasted round trip of the actor: lease, file listing,
plan, ack) and those the plan would merge that the decider never queued (left as they
are), for

* before: the verdict from the sums of all undersized files (``icefloe.optimizer.estimate``: one
  rolling writer over them), the floor counting undersized files on both sides;
* now: ``icefloe.optimizer.merge_need`` (small files' count and bytes, ``merge_lowers``), the floor
  counting small files on both sides.

Then the time of one verdict (median of 5 passes over the partitions), and one
``verdict-summary`` line. Not a test.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icefloe.optimizer import (  # noqa: E402
    PartitionStats,
    estimate,
    merge_need,
    plan_partition,
    stats_from_sizes,
)

T = 1000
Verdict = Callable[[PartitionStats, int, int], bool]


def shapes(rng: random.Random) -> dict[str, Callable[[], list[int]]]:
    def uniform(lo: int, hi: int, most: int) -> Callable[[], list[int]]:
        return lambda: [rng.randint(lo, hi) for _ in range(rng.randint(1, most))]

    def mixed() -> list[int]:
        pick = [(1, 1000), (1, 1500), (700, 800)]
        return [rng.randint(*rng.choice(pick)) for _ in range(rng.randint(1, 8))]

    def stream() -> list[int]:  # merged outputs, then a stream's small appends
        done = [rng.randint(700, 1000) for _ in range(rng.randint(0, 4))]
        top = rng.choice([50, 200, 400, 700])
        return done + [rng.randint(1, top) for _ in range(rng.randint(1, 12))]

    return {
        "mixed": mixed,
        "stream": stream,
        "halves (300-749)": uniform(300, 749, 8),
        "wide (1-1200, up to 60 files)": uniform(1, 1200, 60),
        "near (650-1000)": uniform(650, 1000, 10),
    }


def before(stats: PartitionStats, tolerance: int, floor: int) -> bool:
    if not stats.needs_work(tolerance) or estimate(stats, T)[1] <= 0:
        return False
    return stats.undersized >= floor or stats.fills_target(T)


def now(stats: PartitionStats, tolerance: int, floor: int) -> bool:
    return merge_need(stats, T, tolerance, floor) == "merge"


def plan_merges(
    sizes: list[int], stats: PartitionStats, tol: int, floor: int, count: str, ordered: bool = False
) -> bool:
    """The actor's gate (the floor counting ``count``: undersized or small files), then
    its plan (``ordered``: a sorted table's, over ``sizes`` in key order)."""
    if not stats.needs_work(tol):
        return False
    if getattr(stats, count) < floor and not stats.fills_target(T):
        return False
    return bool(plan_partition(sizes, T, tol, preserve_order=ordered).groups)


def compare(partitions: list[list[int]], tol: int, floor: int) -> list[tuple[int, int, int]]:
    """(plan merges, queued and refused, missed) before and now."""
    out = []
    for verdict, count in ((before, "undersized"), (now, "small_files")):
        merges = wasted = missed = 0
        for sizes in partitions:
            stats = stats_from_sizes(sizes, T)
            planned = plan_merges(sizes, stats, tol, floor, count)
            queued = verdict(stats, tol, floor)
            merges += planned
            wasted += queued and not planned
            missed += planned and not queued
        out.append((merges, wasted, missed))
    return out


def timed(verdict: Verdict, stats: list[PartitionStats]) -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for s in stats:
            verdict(s, T // 3, 5)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs) / len(stats) * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=20_000, help="per shape")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print(f"T = {T} bytes, {args.partitions:,} random partitions per shape")
    print(
        "| shape | tolerance | floor | plan merges | queued, refused (before → now) "
        "| missed (before → now) |"
    )
    print("|---|---|---|---|---|---|")
    totals = [0, 0, 0, 0, 0]
    every: list[PartitionStats] = []
    for name, make in shapes(rng).items():
        partitions = [make() for _ in range(args.partitions)]
        every += [stats_from_sizes(p, T) for p in partitions]
        for tol in (T // 3, 0):
            for floor in (5, 2):
                (m0, w0, x0), (m1, w1, x1) = compare(partitions, tol, floor)
                print(f"| {name} | {tol} | {floor} | {m1:,} | {w0:,} → {w1:,} | {x0:,} → {x1:,} |")
                totals = [a + b for a, b in zip(totals, (m1, w0, w1, x0, x1), strict=True)]
    m, w0, w1, x0, x1 = totals
    print(f"| **all** | | | {m:,} | {w0:,} → {w1:,} | {x0:,} → {x1:,} |")
    refused = missed = 0
    for sizes in (shapes(rng)["mixed"]() for _ in range(args.partitions)):  # in key order
        stats = stats_from_sizes(sizes, T)
        queued = now(stats, T // 3, 5)
        planned = plan_merges(sizes, stats, T // 3, 5, "small_files", ordered=True)
        refused += queued and not planned
        missed += planned and not queued
    print(
        f"sorted table, {args.partitions:,} mixed partitions in key order: the sums' verdict "
        f"queues {refused:,} the ordered plan refuses, misses {missed:,} (the decider now "
        "plans those from the kept file bounds: none)"
    )
    t0, t1 = timed(before, every), timed(now, every)
    print(f"one verdict: {t0:.0f} ns before, {t1:.0f} ns now ({t1 / t0:.2f}x)")
    print(
        f"verdict-summary partitions={len(every)} plan_merges={m} refused_before={w0} "
        f"refused_now={w1} missed_before={x0} missed_now={x1} verdict_ratio={t1 / t0:.3f}"
    )


if __name__ == "__main__":
    main()
