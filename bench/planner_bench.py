"""Planner benchmark: our minimum-replacement planner against models of Iceberg and Amoro.

Run as ``python bench/planner_bench.py`` (under a minute). Not a test: nothing here
asserts on time. For a fixed, seeded mix of generated partitions it prints, per shape,
bytes rewritten, predicted files after and entropy after for

* ``ours-tol``  -- ``plan_partition`` at the default tolerance (essential plan),
* ``ours-t0``   -- ``plan_partition`` at tolerance 0 (complete modified FFD),
* ``iceberg``   -- Iceberg's default ``rewrite_data_files`` binpack selection: files
  ``< 0.75·T`` or ``> 1.8·T``, next-fit in file order into groups of at most 100 GiB,
  a group kept if it has >= 5 (min-input-files) files, or 2+ files totalling > T, or
  more than 1.8·T; each group written as Iceberg's runner writes it: its output count
  (``numOutputFiles``: a remainder under 0.75·T folded into the other files while they
  stay under 1.1·T) of files of even size (``even_outputs``); ours are written as
  ``predict_output_sizes`` says (even while each is 0.8·T or more, else files of T and
  one remainder).
* ``amoro``     -- Amoro's self-optimizing defaults: fragments ``<= T/8``, undersized
  segments ``(T/8, 0.75·T]``; the partition is planned if there are >= 2 fragments
  (minor interval assumed elapsed) or undersized segments total >= T with the two
  smallest fitting in T; undersized segments packed first-fit unsorted into tasks of T
  (tasks of one segment dropped), fragments packed first-fit unsorted into tasks of T
  (all kept); each task written by a rolling writer.

Then plan time, plan time at scale (#21's shape: 100,000 files of 1 KB-40 MB, 128 MiB
target, tolerance 0) beside the pre-#21 planner kept as the tests' reference
(``tests/unit/optimizer/reference_planner.py``), rolling-update throughput and scheduler
throughput, and one final ``planner-summary`` line (ratios are ours / Iceberg model over
the whole mix; ``scale_ratio`` is now / before #21).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icefloe.optimizer import (  # noqa: E402
    DEFAULT_TOLERANCE_FRACTION,
    FlowView,
    PartitionStats,
    apply_delta,
    default_tolerance,
    fair_priority_scheduler,
    output_count,
    plan_partition,
    predict_output_sizes,
    stats_from_sizes,
)
from tests.unit.optimizer.reference_planner import reference_plan  # noqa: E402

MB = 1 << 20
GB = 1 << 30
T = 512 * MB  # Iceberg's default write.target-file-size-bytes


@dataclass(frozen=True)
class Outcome:
    bytes_rewritten: int
    files_after: int
    mse_after: float


def even_outputs(total: int, target: int) -> list[int]:
    """Iceberg's runner: ``numOutputFiles`` files of even size, however small."""
    count = output_count(total, target)
    load, heavier = divmod(total, count) if count else (0, 0)
    return [load + 1] * heavier + [load] * (count - heavier)


def outcome(sizes: Sequence[int], groups: list[list[int]], even: bool = False) -> Outcome:
    """A plan's bytes, files and MSE after; ``even``: groups written as Iceberg writes
    them (:func:`even_outputs`), else as icefloe does (``predict_output_sizes``)."""
    touched = {i for g in groups for i in g}
    after = [s for i, s in enumerate(sizes) if i not in touched]
    rewritten = 0
    for g in groups:
        total = sum(sizes[i] for i in g)
        rewritten += total
        after.extend(even_outputs(total, T) if even else predict_output_sizes(total, T))
    stats = stats_from_sizes(after, T)
    return Outcome(rewritten, stats.n, stats.mse)


def iceberg_groups(sizes: Sequence[int]) -> list[list[int]]:
    min_size, max_size = int(T * 0.75), int(T * 1.8)
    max_group, min_input_files = 100 * GB, 5
    groups: list[list[int]] = []
    cur: list[int] = []
    cur_bytes = 0
    for i, s in enumerate(sizes):
        if min_size <= s <= max_size:
            continue
        if cur and cur_bytes + s > max_group:  # next fit (ListPacker lookback 1)
            groups.append(cur)
            cur, cur_bytes = [], 0
        cur.append(i)
        cur_bytes += s
    if cur:
        groups.append(cur)

    def keep(g: list[int]) -> bool:
        total = sum(sizes[i] for i in g)
        many = len(g) > 1 and len(g) >= min_input_files
        return many or (len(g) > 1 and total > T) or total > max_size

    return [g for g in groups if keep(g)]


def first_fit_unsorted(items: list[int], sizes: Sequence[int], cap: int) -> list[list[int]]:
    bins: list[list[int]] = []
    fill: list[int] = []
    for i in items:
        for b, f in enumerate(fill):
            if f + sizes[i] <= cap:
                bins[b].append(i)
                fill[b] += sizes[i]
                break
        else:
            bins.append([i])
            fill.append(sizes[i])
    return bins


def amoro_groups(sizes: Sequence[int]) -> list[list[int]]:
    fragment, min_target = T // 8, int(T * 0.75)
    frags = [i for i, s in enumerate(sizes) if s <= fragment]
    under = [i for i, s in enumerate(sizes) if fragment < s <= min_target]
    smallest = sorted(sizes[i] for i in under)[:2]
    major = sum(sizes[i] for i in under) >= T and len(smallest) == 2 and sum(smallest) <= T
    minor = len(frags) >= 2
    if not (major or minor):
        return []
    task = max(T, 128 * MB)
    groups = [g for g in first_fit_unsorted(under, sizes, task) if len(g) > 1]
    return groups + first_fit_unsorted(frags, sizes, task)


def lognormal(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, int(rng.lognormvariate(0, sigma) * median)))


def make_mix(seed: int = 42, scale: float = 1.0, per_shape: int = 6) -> dict[str, list[list[int]]]:
    """The benchmark mix: ``per_shape`` partitions of each shape, sizes in bytes at ``T``.

    ``scale`` multiplies every partition's file count (the actors bench builds this mix
    as real tables at ``scale`` < 1); at 1.0 it is the planner bench's own mix.
    """
    rng = random.Random(seed)

    def count(lo: int, hi: int) -> int:
        return max(1, round(rng.randint(lo, hi) * scale))

    mix: dict[str, list[list[int]]] = {}
    mix["tiny-stream"] = [
        [lognormal(rng, 2 * MB, 0.8, 64 * 1024, 64 * MB) for _ in range(count(500, 3000))]
        for _ in range(per_shape)
    ]
    mix["late-small"] = [
        [rng.randint(int(0.8 * T), T) for _ in range(count(50, 300))]
        + [lognormal(rng, 8 * MB, 1.0, 256 * 1024, 128 * MB) for _ in range(count(5, 60))]
        for _ in range(per_shape)
    ]
    mix["uniform"] = [
        [rng.randint(MB, T) for _ in range(count(100, 800))] for _ in range(per_shape)
    ]
    mix["log-normal"] = [
        [lognormal(rng, T / 8, 1.2, 64 * 1024, 2 * T) for _ in range(count(100, 800))]
        for _ in range(per_shape)
    ]
    mix["compacted"] = [
        [rng.randint(int(0.85 * T), int(1.05 * T)) for _ in range(count(50, 400))]
        + [rng.randint(5 * MB, int(0.7 * T)) for _ in range(rng.randint(0, 6))]
        for _ in range(per_shape)
    ]
    for shape, parts in mix.items():
        if shape != "late-small":  # late files arrive last; the others in any order
            for p in parts:
                rng.shuffle(p)
    return mix


Strategy = Callable[[Sequence[int]], list[list[int]]]


def strategies() -> dict[str, Strategy]:
    tol = default_tolerance(T)
    return {
        "ours-tol": lambda s: plan_partition(s, T, tol).groups,
        "ours-t0": lambda s: plan_partition(s, T).groups,
        "iceberg": iceberg_groups,
        "amoro": amoro_groups,
    }


def compare(mix: dict[str, list[list[int]]]) -> dict[str, list[Outcome]]:
    names = list(strategies())
    results: dict[str, list[Outcome]] = {n: [] for n in names}
    tol = default_tolerance(T)
    print(
        f"target {T // MB} MiB, default tolerance {tol / MB:.1f} MiB "
        f"({DEFAULT_TOLERANCE_FRACTION:.3f}·T)\n"
    )
    print(
        f"{'shape':<12} {'strategy':<9} {'rewritten GiB':>14} {'files after':>12} "
        f"{'RMS after MiB':>14}"
    )
    for shape, parts in mix.items():
        before = [stats_from_sizes(p, T) for p in parts]
        files = sum(b.n for b in before)
        rms = statistics.fmean(b.mse for b in before) ** 0.5 / MB
        print(f"{shape:<12} {'before':<9} {'':>14} {files:>12} {rms:>14.1f}")
        for name, plan in strategies().items():
            outs = [outcome(p, plan(p), even=name in ("iceberg", "amoro")) for p in parts]
            results[name].extend(outs)
            print(
                f"{'':<12} {name:<9} {sum(o.bytes_rewritten for o in outs) / GB:>14.2f} "
                f"{sum(o.files_after for o in outs):>12} "
                f"{statistics.fmean(o.mse_after for o in outs) ** 0.5 / MB:>14.1f}"
            )
    return results


def tolerance_sweep(mix: dict[str, list[list[int]]]) -> None:
    """Bytes and files after vs Iceberg across tolerances: the default's trade-off."""
    parts = [p for ps in mix.values() for p in ps]
    ice = [outcome(p, iceberg_groups(p), even=True) for p in parts]
    ice_bytes = sum(o.bytes_rewritten for o in ice)
    ice_files = sum(o.files_after for o in ice)
    print("\ntolerance sweep (ours / iceberg over the mix)")
    for frac in (0.2, 0.25, 0.3, DEFAULT_TOLERANCE_FRACTION, 0.4, 0.5):
        outs = [outcome(p, plan_partition(p, T, int(T * frac)).groups) for p in parts]
        mark = "  <- default" if frac == DEFAULT_TOLERANCE_FRACTION else ""
        print(
            f"  tol {frac:.3f}·T  bytes {sum(o.bytes_rewritten for o in outs) / ice_bytes:.3f}"
            f"  files {sum(o.files_after for o in outs) / ice_files:.3f}{mark}"
        )


def cpu_ms(fn: Callable[[], object]) -> float:
    """CPU time of one call of ``fn`` in ms: process time, so that other jobs on a shared
    machine do not count (on an idle machine it equals wall time: all of it is Python)."""
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def median_ms(fn: Callable[[], object], runs: int) -> float:
    """Median ``cpu_ms`` of ``fn`` over ``runs`` calls."""
    return statistics.median(cpu_ms(fn) for _ in range(runs))


def plan_times() -> dict[tuple[str, int], float]:
    rng = random.Random(7)
    out: dict[tuple[str, int], float] = {}
    print("\nplan time, log-normal partitions (median CPU ms)")
    for n in (1_000, 10_000, 100_000):
        sizes = [lognormal(rng, T / 16, 1.5, 1024, 2 * T) for _ in range(n)]
        runs = 5 if n < 100_000 else 3
        ffd = median_ms(partial(plan_partition, sizes, T), runs)
        kp = median_ms(partial(plan_partition, sizes, T, preserve_order=True), runs)
        tol = median_ms(partial(plan_partition, sizes, T, default_tolerance(T)), runs)
        out[("ffd", n)], out[("kp", n)] = ffd, kp
        print(f"  {n:>7} files  FFD {ffd:9.1f}  Knuth-Plass {kp:9.1f}  essential FFD {tol:9.1f}")
    return out


def scale_times(runs: int = 5) -> tuple[float, float]:
    """#21's shape, now and before #21: median CPU ms of each, runs alternating.

    Alternating runs let a busy machine slow both alike; the ratio is the number to read.
    The two plans are checked equal (the tests check it on many more inputs).
    """
    rng = random.Random(21)
    sizes = [rng.randint(1_000, 40_000_000) for _ in range(100_000)]
    target = 128 * MB
    now, before = [], []
    for _ in range(runs):
        now.append(cpu_ms(partial(plan_partition, sizes, target, 0)))
        before.append(cpu_ms(partial(reference_plan, sizes, target, 0)))
    assert plan_partition(sizes, target, 0) == reference_plan(sizes, target, 0)
    now_ms, before_ms = statistics.median(now), statistics.median(before)
    print(
        f"\nplan time at scale: 100,000 files of 1 KB-40 MB (uniform), 128 MiB target, "
        f"tolerance 0 (median CPU ms of {runs})"
    )
    print(
        f"  now {now_ms:9.1f}  before #21 {before_ms:9.1f}  "
        f"now/before {ratio(now_ms, before_ms):.3f}"
    )
    return now_ms, before_ms


def rolling_throughput() -> float:
    rng = random.Random(11)
    snapshots = []
    present: list[int] = []
    for _ in range(20_000):  # streaming commits: 8 new files, now and then a compaction
        added = [lognormal(rng, 4 * MB, 1.0, 1024, T) for _ in range(8)]
        deleted = [present.pop(rng.randrange(len(present))) for _ in range(min(2, len(present)))]
        present.extend(added)
        snapshots.append((added, deleted))
    events = sum(len(a) + len(d) for a, d in snapshots)

    def run() -> PartitionStats:
        stats = PartitionStats()
        for added, deleted in snapshots:
            stats = apply_delta(stats, T, added, deleted)
        return stats

    assert run() == stats_from_sizes(present, T)
    rate = events / (median_ms(run, 5) / 1000)
    print(f"\nrolling updates: {events} file events per pass, {rate:,.0f} events/s")
    return rate


def scheduler_throughput() -> float:
    rng = random.Random(5)
    sched = fair_priority_scheduler(quantum=256 * MB, aging_seconds=600)
    views = {
        f"db.table_{k:03d}": FlowView(
            head_cost=rng.randint(1, 1024) * MB,
            enqueued_at=0.0,
            priority=rng.randint(0, 2),
            weight=rng.randint(1, 4),
        )
        for k in range(50)
    }
    n = 20_000
    start = time.process_time()
    for step in range(n):
        flow = sched.choose(views, float(step))
        assert flow is not None
        old = views[flow]
        views[flow] = FlowView(rng.randint(1, 1024) * MB, float(step), old.priority, old.weight)
    rate = n / (time.process_time() - start)
    print(f"scheduler: 50 flows, 3 classes, {rate:,.0f} dispatches/s")
    return rate


def ratio(ours: float, theirs: float) -> float:
    return ours / theirs if theirs else float("inf")


def main() -> None:
    mix = make_mix()
    results = compare(mix)
    tolerance_sweep(mix)
    times = plan_times()
    scale_now, scale_before = scale_times()
    rolling = rolling_throughput()
    scheduler_throughput()
    ice, t0, tol = results["iceberg"], results["ours-t0"], results["ours-tol"]

    def total(outs: list[Outcome], field: str) -> float:
        return float(sum(getattr(o, field) for o in outs))

    def mean_mse(outs: list[Outcome]) -> float:
        return statistics.fmean(o.mse_after for o in outs)

    summary = {
        "t0_bytes_vs_iceberg": ratio(total(t0, "bytes_rewritten"), total(ice, "bytes_rewritten")),
        "t0_mse_vs_iceberg": ratio(mean_mse(t0), mean_mse(ice)),
        "t0_files_vs_iceberg": ratio(total(t0, "files_after"), total(ice, "files_after")),
        "tol_bytes_vs_iceberg": ratio(total(tol, "bytes_rewritten"), total(ice, "bytes_rewritten")),
        "tol_files_vs_iceberg": ratio(total(tol, "files_after"), total(ice, "files_after")),
    }
    fields = [f"{k}={v:.3f}" for k, v in summary.items()] + [
        f"ffd_100k_ms={times[('ffd', 100_000)]:.0f}",
        f"kp_10k_ms={times[('kp', 10_000)]:.0f}",
        f"scale_100k_ms={scale_now:.0f}",
        f"scale_100k_before_ms={scale_before:.0f}",
        f"scale_ratio={ratio(scale_now, scale_before):.3f}",
        f"rolling_events_per_s={rolling:.0f}",
    ]
    print("planner-summary " + " ".join(fields))


if __name__ == "__main__":
    main()
