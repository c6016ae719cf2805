"""File Size Entropy (FSE): how far a partition's data files fall short of the target size.

Every data file of size ``s`` has an error ``e = T - min(s, T)`` against the target size
``T``: files at or above the target score 0, undersized files score how many bytes they
are missing. A partition's entropy is the mean squared error ``MSE = SSE / N``. Squaring
is deliberate: it is biased towards outliers, so a mixed bag of perfect and tiny files
scores worse than an even spread of slightly small ones.

We keep ``N`` and ``SSE`` (an exact Python int), never the MSE itself, because both are
sums over files: one snapshot's added and deleted files then update the stats exactly,
in time proportional to the files the snapshot touched, and stats of disjoint file sets
(shards of a scan, partitions of a table) add up. Nothing here ever drifts: the ints
are exact, so a rolling update equals a full recomputation bit for bit.

``predict_output_sizes`` is the single model of what a rewrite writes; the planner,
the benchmark and the Spark actors all use (or must match) it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


def _check_target(target: int) -> None:
    if target <= 0:
        raise ValueError(f"target file size must be > 0 bytes, got {target}")


def file_error(size: int, target: int) -> int:
    """Bytes a file of ``size`` is missing to reach ``target`` (0 when it reaches it)."""
    _check_target(target)
    if size < 0:
        raise ValueError(f"file size must be >= 0 bytes, got {size}")
    return target - size if size < target else 0


def is_small(size: int, target: int) -> bool:
    """Is a file under Iceberg's minimum file size (``min-file-size-bytes``: 0.75 · T)?
    Such files are what Iceberg's binpack rewrites (:meth:`PartitionStats.fills_target`)."""
    return 4 * size < 3 * target


@dataclass(frozen=True, slots=True)
class PartitionStats:
    """Entropy stats of one partition's data files against one target size.

    ``n`` files, ``sse`` = sum of squared errors (exact int), ``total_bytes``,
    ``undersized`` = files smaller than the target, ``delete_files`` = delete files that
    apply to the partition (they do not enter the MSE; they feed delete compaction, with
    ``data_rows`` = the data files' rows, ``delete_bytes`` and ``deleted_rows`` = the
    delete files' bytes and rows: positions, or equality rows), ``small_bytes`` = the
    bytes of the files under Iceberg's minimum size (:func:`is_small`), what its rule that
    small files fill a target counts (:meth:`fills_target`), and ``small_files`` their
    count: the files a merge can rewrite (:meth:`merge_lowers`).
    """

    n: int = 0
    sse: int = 0
    total_bytes: int = 0
    undersized: int = 0
    delete_files: int = 0
    data_rows: int = 0
    delete_bytes: int = 0
    deleted_rows: int = 0
    small_bytes: int = 0
    small_files: int = 0

    @property
    def mse(self) -> float:
        """Mean squared error in bytes²; 0.0 for an empty partition."""
        return self.sse / self.n if self.n else 0.0

    @property
    def delete_ratio(self) -> float:
        """Rows the delete files delete per data row (0.0 without data rows)."""
        return self.deleted_rows / self.data_rows if self.data_rows else 0.0

    @property
    def is_empty(self) -> bool:
        return self.n == 0

    def fills_target(self, target: int) -> bool:
        """Iceberg's rule (``enoughContent``): the files under its minimum size
        (:func:`is_small`) together hold more than one target file, worth merging whatever
        their count. Exact: the same answer from rolling stats as from a scan."""
        return self.small_bytes > target

    def merge_lowers(self, target: int) -> bool:
        """Does merging the partition's small files (:func:`is_small`, the only files the
        planner packs) lower its SSE? Iff there are two or more and a rewrite of all of
        them writes fewer files than they are: ``output_count(small_bytes) < small_files``.
        Exact for the planner (``icefloe.optimizer.plan_partition`` finds a group then, and none
        otherwise): four or more small files always make fewer (each is under 0.75·T);
        two make one file up to 1.1·T, and three make two up to 2.2·T (both Iceberg's
        fold of a remainder); past that, two files cannot share one, and three are each
        over 0.7·T, so any two of them hold over 1.4·T."""
        k = self.small_files
        return k >= 2 and output_count(self.small_bytes, target) < k

    def needs_work(self, tolerance: float) -> bool:
        """True iff the partition has files and ``mse >= tolerance²``.

        Compared as ``sse >= tolerance² · n`` so that integer tolerances are exact even
        when the SSE is far beyond float precision.
        """
        if tolerance < 0:
            raise ValueError(f"tolerance must be >= 0 bytes, got {tolerance}")
        return self.n > 0 and self.sse >= tolerance * tolerance * self.n

    def __add__(self, other: PartitionStats) -> PartitionStats:
        """Stats of the union of two disjoint file sets (same target)."""
        return PartitionStats(
            n=self.n + other.n,
            sse=self.sse + other.sse,
            total_bytes=self.total_bytes + other.total_bytes,
            undersized=self.undersized + other.undersized,
            delete_files=self.delete_files + other.delete_files,
            data_rows=self.data_rows + other.data_rows,
            delete_bytes=self.delete_bytes + other.delete_bytes,
            deleted_rows=self.deleted_rows + other.deleted_rows,
            small_bytes=self.small_bytes + other.small_bytes,
            small_files=self.small_files + other.small_files,
        )


def _sums(sizes: Iterable[int], target: int) -> tuple[int, int, int, int, int, int]:
    """(count, sse, bytes, undersized, small bytes, small files) of ``sizes``; the hot loop
    of rolling updates."""
    n = sse = total = under = small = smalls = 0
    small_below = (3 * target + 3) // 4  # s < this  <=>  4·s < 3·T  (is_small)
    for s in sizes:
        if s < target:
            if s < 0:
                raise ValueError(f"file size must be >= 0 bytes, got {s}")
            e = target - s
            sse += e * e
            under += 1
            if s < small_below:
                small += s
                smalls += 1
        n += 1
        total += s
    return n, sse, total, under, small, smalls


def stats_from_sizes(
    sizes: Iterable[int],
    target: int,
    delete_files: int = 0,
    rows: tuple[int, int, int] = (0, 0, 0),
) -> PartitionStats:
    """Full computation from a partition's complete list of data file sizes; ``rows``:
    (data rows, delete files' bytes, deleted rows)."""
    _check_target(target)
    if min(delete_files, *rows) < 0:
        raise ValueError(f"delete files and row counts must be >= 0, got {delete_files}, {rows}")
    n, sse, total, under, small, smalls = _sums(sizes, target)
    return PartitionStats(n, sse, total, under, delete_files, *rows, small, smalls)


def apply_delta(
    stats: PartitionStats,
    target: int,
    added_sizes: Iterable[int],
    deleted_sizes: Iterable[int],
    added_delete_files: int = 0,
    removed_delete_files: int = 0,
    rows: tuple[int, int, int] = (0, 0, 0),
) -> PartitionStats:
    """Exact rolling update from one snapshot's added and deleted data files; ``rows``: the
    snapshot's net change of (data rows, delete files' bytes, deleted rows).

    ``N' = N + |added| - |deleted|`` and ``SSE' = SSE + Σ e_a² - Σ e_d²``; deleted sizes
    must be files that are in ``stats`` (same target). A result with a negative count
    or SSE proves they were not, and raises ``ValueError`` rather than hiding the bug.
    When ``N'`` is 0 the partition is empty; the caller may drop its stats.
    """
    _check_target(target)
    an, asse, abytes, aunder, asmall, asmalls = _sums(added_sizes, target)
    dn, dsse, dbytes, dunder, dsmall, dsmalls = _sums(deleted_sizes, target)
    result = PartitionStats(
        n=stats.n + an - dn,
        sse=stats.sse + asse - dsse,
        total_bytes=stats.total_bytes + abytes - dbytes,
        undersized=stats.undersized + aunder - dunder,
        delete_files=stats.delete_files + added_delete_files - removed_delete_files,
        data_rows=stats.data_rows + rows[0],
        delete_bytes=stats.delete_bytes + rows[1],
        deleted_rows=stats.deleted_rows + rows[2],
        small_bytes=stats.small_bytes + asmall - dsmall,
        small_files=stats.small_files + asmalls - dsmalls,
    )
    r = result
    counts = (r.n, r.sse, r.total_bytes, r.undersized, r.small_bytes, r.small_files)
    if min(*counts, result.delete_files) < 0:
        raise ValueError(f"delta removes files that are not in the stats: {stats} -> {result}")
    if min(result.data_rows, result.delete_bytes, result.deleted_rows) < 0:
        raise ValueError(f"delta removes rows that are not in the stats: {stats} -> {result}")
    if result.n == 0 and any(counts):
        raise ValueError(f"delta leaves no files but non-zero sums: {result}")
    return result


def merge_stats(parts: Iterable[PartitionStats]) -> PartitionStats:
    """Stats of the union of disjoint file sets, e.g. shards of a distributed scan."""
    out = PartitionStats()
    for p in parts:
        out = out + p
    return out


def output_count(total: int, target: int) -> int:
    """How many files a rewrite of ``total`` bytes writes: Iceberg's ``numOutputFiles``.

    One file for less than a target. Else ``floor(S/T)`` files, plus one for the
    remainder when it is over Iceberg's minimum file size (0.75·T, as a whole number of
    bytes) or when folding it in would take the others to 1.1·T or more on average
    (Iceberg's bound: ``1.1 · T``, under its write maximum of ``1.4 · T`` for the default
    maximum file size of ``1.8 · T``).
    A group of 0.21, 0.27 and 0.54·T is one file of 1.02·T, not one of T and a 0.02·T
    sliver that is small again.
    """
    _check_target(target)
    if total < 0:
        raise ValueError(f"total must be >= 0 bytes, got {total}")
    if total == 0:
        return 0
    full, rest = divmod(total, target)
    if full == 0:
        return 1
    if rest == 0:
        return full
    if rest > int(target * 0.75) or not total // full < _fold_limit(target):
        return full + 1
    return full


def _fold_limit(target: int) -> float:
    """Iceberg's ``Math.min(1.1 * targetFileSize, writeMaxFileSize())`` for the default
    maximum file size (1.8·T), in the same double arithmetic (so ``1.1 · 100`` is a hair
    over 110, as in Java)."""
    write_max = int(target + (int(target * 1.8) - target) * 0.5)
    return min(1.1 * target, write_max)


def one_file_max(target: int) -> int:
    """The most bytes a rewrite writes as one file: just under 1.1·T (:func:`output_count`)."""
    _check_target(target)
    most = max(target, math.ceil(_fold_limit(target)))
    while most > target and not most < _fold_limit(target):
        most -= 1
    return most


def predict_output_sizes(total: int, target: int) -> list[int]:
    """Sizes of the files a rewrite of ``total`` bytes writes with target ``T``, larger
    ones first: :func:`output_count` files of even size (Iceberg's runner reads
    ``S / count`` per writer) while every one of them is comfortably over Iceberg's minimum
    file size (0.75·T, :func:`is_small`; :data:`EVEN_FLOOR`); else files of ``T`` and one
    remainder.

    Even files that are all small would all be merged again, with the next small files
    that arrive: 1.3·T as two files of 0.65·T rewrites 1.3·T at the next pass, as one of
    ``T`` and one of 0.3·T only the 0.3·T. (Only two or three outputs can fall under
    0.8·T: 1.1-1.6·T as two, 2.2-2.4·T as three.) ``total`` is what the group writes:
    the caller's merged bytes (:mod:`icefloe.optimizer.output_model`).
    """
    count = output_count(total, target)
    if count == 0:
        return []
    load, heavier = divmod(total, count)
    if count == 1 or not is_short(load, target):
        return [load + 1] * heavier + [load] * (count - heavier)
    return [target] * (count - 1) + [total - (count - 1) * target]


EVEN_FLOOR = 0.8
"""Even outputs are written only when each holds this fraction of the target: a margin
over Iceberg's 0.75·T line for the error of predicting what merged rows take (a few
percent), so that even files predicted just over the line do not land just under it."""


def is_short(load: int, target: int) -> bool:
    """Is an output of ``load`` bytes under :data:`EVEN_FLOOR` of the target: too near the
    small line to be written on purpose, beside others, rather than as the remainder?"""
    return 5 * load < 4 * target


def output_sse(total: int, target: int) -> int:
    """SSE of ``predict_output_sizes(total, target)`` without building the list."""
    count = output_count(total, target)
    if count == 0:
        return 0
    load, heavier = divmod(total, count)
    if count > 1 and is_short(load, target):
        short = target - (total - (count - 1) * target)
        return short * short
    short, shorter = max(0, target - load - 1), max(0, target - load)
    return heavier * short * short + (count - heavier) * shorter * shorter


def estimate(stats: PartitionStats, target: int) -> tuple[int, float]:
    """(bytes to rewrite, expected MSE reduction) if *all* undersized files are merged by a
    rolling writer: the model of a rewrite that takes every file under the target, as
    Iceberg's ``rewrite_manifests`` does with small manifests. Data files are merged as the
    planner merges them: :func:`merge_estimate`.

    The undersized bytes are estimated from the sums: by Cauchy–Schwarz
    ``Σe <= sqrt(k·SSE)``, exact when the undersized files are equal, so
    ``bytes ≈ k·T - sqrt(k·SSE)``, written as full files and the remainder.
    """
    k = stats.undersized
    if k < 2 or stats.n == 0:
        return 0, 0.0
    under_bytes = max(0, min(stats.total_bytes, k * target - math.isqrt(k * stats.sse)))
    n_after = stats.n - k + max(1, -(-under_bytes // target))
    rest = under_bytes % target  # a rolling writer: full files and the remainder
    mse_after = ((target - rest) ** 2 if rest else 0) / n_after
    return under_bytes, max(0.0, stats.mse - mse_after)


def merge_estimate(stats: PartitionStats, target: int) -> tuple[int, float]:
    """(bytes to rewrite, expected MSE reduction) if the partition's small files are merged
    as the actor's plan merges them; (0, 0.0) when that lowers nothing
    (:meth:`PartitionStats.merge_lowers`). The ordering value of an item is
    ``reduction / bytes``: entropy removed per byte rewritten.

    The bytes are the small files' (``small_bytes``: the planner packs only files under
    0.75·T), exact for a plan that merges them all, an upper bound of one that need not. They
    are written as ``m =`` :func:`output_count` files of even size (the planner's
    balanced bins). The rolling stats do not keep the small files' own SSE apart from the other
    undersized files' (each of those misses at most ``T/4``), so it is bounded: at least
    what ``k`` equal files would miss (Cauchy–Schwarz, exact for equal files), at least the
    partition's SSE less what the others can miss, at most the partition's SSE.
    """
    if not stats.merge_lowers(target):
        return 0, 0.0
    k, small = stats.small_files, stats.small_bytes
    outputs = output_count(small, target)
    others = stats.undersized - k
    worst_other = target - (3 * target + 3) // 4  # a file not small misses at most this
    equal = -(-((k * target - small) ** 2) // k)
    inputs_sse = min(stats.sse, max(equal, stats.sse - others * worst_other * worst_other))
    outputs_sse = output_sse(small, target)
    n_after = stats.n - k + outputs
    mse_after = (stats.sse - inputs_sse + outputs_sse) / n_after if n_after else 0.0
    return small, max(0.0, stats.mse - mse_after)


def merge_need(stats: PartitionStats, target: int, tolerance: float, floor: int) -> str | None:
    """What merging a partition's small files is worth, from its rolling stats: ``"merge"``
    (over tolerance², and a merge of its small files lowers the SSE: ``floor`` small files
    at least, or small files that together hold more than a target, Iceberg's rule),
    ``"wait"`` (fewer than ``floor``: for more, or for the wait limit) or None (within
    tolerance, or nothing to gain: fewer than two small files, or small files that fill
    as many target files as they are). Small files are those under Iceberg's minimum size
    (:func:`is_small`), the files the actor's plan packs; every part of the verdict is
    counted exactly as the plan counts it, so the two agree on every partition."""
    if not stats.needs_work(tolerance) or not stats.merge_lowers(target):
        return None
    return "wait" if stats.small_files < floor and not stats.fills_target(target) else "merge"
