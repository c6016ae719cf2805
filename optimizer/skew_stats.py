"""Skew statistics: which partitions are oversized, which keys are hot, how far to salt.

Pure and small on purpose: the Spark jobs collect sizes and key counts (metadata, or one
aggregation), hand them here as plain numbers, and act on the answer. Nothing in this
module knows about Spark, Iceberg or Redis, so every rule is unit-tested on lists.

Two kinds of skew are measured:

* **storage skew** — some partitions hold far more bytes or rows than the rest. The
  classic detector flags ``|size - mean| > 2σ``; because a single giant partition inflates
  σ itself, max/median, the coefficient of variation and the Gini coefficient are reported
  beside it (they stay meaningful with few partitions).
* **key skew** — a few join or group keys carry a large share of the rows. A key is hot
  when it passes *every* configured rule: at least ``min_rows`` rows, at least
  ``min_share`` of all rows, and at least ``median_multiple`` times the median key. The
  share rule alone would flag every key of a 20-key uniform table; the median rule alone
  would flag half of a Zipf table's long tail.

Salting a hot key into N buckets spreads its rows over N tasks but replicates the other
side's rows for that key N times; :func:`salt_plan` picks N per key from a target
partition size, keeps the total replication under a budget, and says whether the
predicted gain beats the replication cost at all (the guardrail).
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

SIGMA_RULE = 2.0  # |size - mean| > 2 sigma: the reference's storage-skew detector


@dataclass(frozen=True)
class SkewMetrics:
    """Summary of a size distribution (partition bytes, rows per key, task times...)."""

    count: int
    total: float
    mean: float
    median: float
    stddev: float
    max: float
    max_over_median: float
    max_over_p75: float
    cv: float
    gini: float


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values (numpy's default method)."""
    if not sorted_values:
        return 0.0
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _ratio(a: float, b: float) -> float:
    if b > 0:
        return a / b
    return 0.0 if a == 0 else math.inf


def gini(values: Iterable[float]) -> float:
    """Gini coefficient in [0, 1): 0 = perfectly even, → 1 = everything in one place."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    total = sum(xs)
    if n == 0 or total <= 0:
        return 0.0
    weighted = sum((i + 1) * x for i, x in enumerate(xs))
    return max(0.0, (2.0 * weighted) / (n * total) - (n + 1.0) / n)


def skew_metrics(values: Iterable[float]) -> SkewMetrics:
    """Mean, median, σ (population), max/median, max/p75, CV and Gini of ``values``."""
    xs = sorted(float(v) for v in values)
    if any(x < 0 for x in xs):
        raise ValueError("sizes must be non-negative")
    if not xs:
        return SkewMetrics(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    total = sum(xs)
    mean = total / len(xs)
    median = statistics.median(xs)
    stddev = statistics.pstdev(xs) if len(xs) > 1 else 0.0
    top = xs[-1]
    return SkewMetrics(
        count=len(xs),
        total=total,
        mean=mean,
        median=median,
        stddev=stddev,
        max=top,
        max_over_median=_ratio(top, median),
        max_over_p75=_ratio(top, _quantile(xs, 0.75)),
        cv=_ratio(stddev, mean) if mean > 0 else 0.0,
        gini=gini(xs),
    )


def sigma_outliers(sizes: Mapping[K, float], sigmas: float = SIGMA_RULE) -> list[K]:
    """Names whose size is more than ``sigmas`` standard deviations from the mean.

    Both directions are flagged, as in the reference detector (a nearly empty partition
    among large ones is skew too). Returned largest deviation first, ties by name order
    of the mapping.
    """
    if len(sizes) < 2:
        return []
    values = [float(v) for v in sizes.values()]
    mean = statistics.fmean(values)
    sd = statistics.pstdev(values)
    if sd == 0:
        return []
    flagged = [(abs(float(v) - mean), i, k) for i, (k, v) in enumerate(sizes.items())]
    return [k for dev, _, k in sorted(flagged, key=lambda t: (-t[0], t[1])) if dev > sigmas * sd]


@dataclass(frozen=True)
class HotKeyRules:
    """A key is hot when it passes every rule (set one to 0 to switch it off)."""

    min_share: float = 0.01
    median_multiple: float = 10.0
    min_rows: int = 1
    max_keys: int = 64

    def __post_init__(self) -> None:
        if not 0 <= self.min_share <= 1:
            raise ValueError(f"min_share must be in [0, 1], got {self.min_share!r}")
        if self.median_multiple < 0 or self.min_rows < 0 or self.max_keys < 1:
            raise ValueError("median_multiple, min_rows must be >= 0 and max_keys >= 1")


@dataclass(frozen=True)
class HotKey:
    key: object
    rows: int
    share: float


def hot_keys(
    counts: Iterable[tuple[K, int]],
    rules: HotKeyRules = HotKeyRules(),
    total_rows: int | None = None,
    median: float | None = None,
    null_is_key: bool = False,
) -> list[HotKey]:
    """Hot keys of ``(key, rows)`` pairs, most rows first (at most ``rules.max_keys``).

    ``total_rows`` and ``median`` default to the sum and median of ``counts``; callers that
    only pass candidate keys (from a sample) supply the table's totals instead. A ``None``
    key never joins anything and is not reported as hot unless ``null_is_key`` (a GROUP BY
    does group NULLs, so aggregations pass True).
    """
    pairs = [(k, int(n)) for k, n in counts]
    total = sum(n for _, n in pairs) if total_rows is None else int(total_rows)
    if median is None:
        median = statistics.median([n for _, n in pairs]) if pairs else 0.0
    out = []
    for key, rows in pairs:
        if (key is None and not null_is_key) or rows <= 0:
            continue
        share = rows / total if total > 0 else 0.0
        if rows < rules.min_rows or share < rules.min_share:
            continue
        if rows < rules.median_multiple * median:
            continue
        out.append(HotKey(key, rows, share))
    out.sort(key=lambda h: (-h.rows, repr(h.key)))
    return out[: rules.max_keys]


def salt_count(
    hot_rows: int,
    target_rows: int,
    other_rows: int = 0,
    replication_budget: int | None = None,
    max_salts: int = 64,
) -> int:
    """Buckets for one hot key: enough that each holds about ``target_rows`` rows.

    Salting N ways copies the other side's ``other_rows`` rows of this key N times, so N
    is also capped at ``1 + replication_budget // other_rows`` (extra copies within budget).
    """
    if target_rows < 1 or max_salts < 1:
        raise ValueError("target_rows and max_salts must be positive")
    n = max(1, min(max_salts, math.ceil(hot_rows / target_rows)))
    if replication_budget is not None and other_rows > 0:
        n = min(n, 1 + max(0, replication_budget) // other_rows)
    return max(1, n)


@dataclass(frozen=True)
class SaltPlan(Generic[K]):
    """Buckets per hot key and the cost model behind the guardrail (all in rows)."""

    salts: Mapping[K, int]
    plain_critical_rows: float
    salted_critical_rows: float
    replicated_rows: int
    worthwhile: bool
    reasons: tuple[str, ...] = field(default_factory=tuple)


def salt_plan(
    hot: Mapping[K, int],
    other: Mapping[K, int],
    total_rows: int,
    partitions: int,
    replication_budget: int | None = None,
    max_salts: int = 64,
    other_total_rows: int = 0,
) -> SaltPlan[K]:
    """Salts per hot key of the salted side, capped by a budget on the replicated side.

    The cost model is a makespan estimate over ``partitions`` parallel tasks. Plain: the
    busiest task holds the biggest key (``max(hot + its other-side rows)``) or the even
    share, whichever is more. Salted: each hot key's task holds ``hot/N`` of its rows plus
    one full copy of the other side's rows; the replication adds
    ``Σ other·(N-1)`` rows spread evenly. Salting is worthwhile only when the critical path
    shrinks by more than the replication adds to every task.
    Default budget: the other side's total rows (at most doubling it).
    """
    if partitions < 1:
        raise ValueError("partitions must be positive")
    both = total_rows + other_total_rows
    even = both / partitions
    target = max(1, math.ceil(total_rows / partitions))
    budget = replication_budget if replication_budget is not None else max(other_total_rows, 0)
    salts: dict[K, int] = {}
    left = budget
    # biggest keys first: they gain the most from the budget
    for key, rows in sorted(hot.items(), key=lambda kv: (-kv[1], repr(kv[0]))):
        o = int(other.get(key, 0))
        n = salt_count(int(rows), target, o, left, max_salts)
        salts[key] = n
        left -= o * (n - 1)
    replicated = sum(int(other.get(k, 0)) * (n - 1) for k, n in salts.items())
    plain = max([even, *((r + other.get(k, 0)) for k, r in hot.items())])
    salted = (
        max([even, *((r / salts[k] + other.get(k, 0)) for k, r in hot.items())])
        + replicated / partitions
    )
    reasons: list[str] = []
    if not hot:
        reasons.append("no hot keys")
    if all(n == 1 for n in salts.values()):
        reasons.append("no key needs more than one bucket")
    gain = plain - salted
    if gain <= 0:
        reasons.append(f"predicted gain {gain:.0f} rows <= 0 after replication")
    worthwhile = not reasons
    return SaltPlan(salts, plain, salted, replicated, worthwhile, tuple(reasons))


def makespan(durations: Iterable[float], slots: int) -> float:
    """Longest-processing-time-first schedule length of ``durations`` on ``slots`` slots.

    Used by the benchmark to predict how a stage's measured task times would behave on a
    bigger cluster: a straggler sets the makespan however many slots there are.
    """
    if slots < 1:
        raise ValueError("slots must be positive")
    loads = [0.0] * slots
    for d in sorted((float(x) for x in durations), reverse=True):
        heapq.heapreplace(loads, loads[0] + d)
    return max(loads)


def spread_salts(
    partition_of: Mapping[K, Sequence[int]],
    buckets: Mapping[K, int],
    rows: Mapping[K, int],
    partitions: int,
) -> dict[K, list[int]]:
    """Salt *values* per hot key whose shuffle partitions do not collide.

    Salting a key into N buckets only helps if the N ``(key, salt)`` pairs hash to N
    different shuffle partitions; with salts ``0..N-1`` two buckets often share one
    (birthday collisions), and that partition is again the straggler. ``partition_of[k][s]``
    is the partition of ``(k, salt=s)`` for candidate salts ``s = 0, 1, ...`` (the caller
    evaluates Spark's partitioning hash); biggest keys first, each bucket goes to the least
    loaded partition not yet used by that key (reused only when a key has more buckets
    than there are partitions).
    """
    if partitions < 1:
        raise ValueError("partitions must be positive")
    load = [0.0] * partitions
    out: dict[K, list[int]] = {}
    for key in sorted(buckets, key=lambda k: (-rows.get(k, 0), repr(k))):
        n = buckets[key]
        cands = partition_of[key]
        size = rows.get(key, 0) / max(n, 1)
        chosen: list[int] = []
        used_parts: set[int] = set()
        taken: set[int] = set()
        for _ in range(n):
            free = [s for s in range(len(cands)) if s not in taken]
            if not free:
                raise ValueError(f"not enough candidate salts for key {key!r}")
            fresh = [s for s in free if cands[s] not in used_parts] or free
            best = min(fresh, key=lambda s: (load[cands[s] % partitions], s))
            chosen.append(best)
            taken.add(best)
            used_parts.add(cands[best])
            load[cands[best] % partitions] += size
        out[key] = sorted(chosen)
    return out
