"""What a merge writes: each file's bytes once merged, from the bytes per row a table writes.

A merge reads files and writes their rows again, and the bytes it writes are not the bytes
it reads. Small streaming files each carry a footer, a dictionary per column and short,
poorly compressed pages; merged, the same rows share one of each. Measured on order
lines (zstd, small files of 200-3,000 rows) the merged rows take 0.9x the input bytes,
and on TPC-H ``lineitem`` written in 150 streaming commits 0.66x: a plan that predicts
outputs from input bytes writes files under 0.75·T, small again, merged at the next pass.

So the planner packs each file by its **merged bytes**: its rows at the bytes per row the
table's merged files take. That rate (:func:`bytes_per_row`) comes from, in order:

1. ``rewrites``: the table's most recent rewrites (each ``replace`` snapshot's added
   bytes and rows, which Iceberg's snapshot summary keeps): what its rewrites really
   write, for this codec and these columns;
   ``sample`` (an actor, on a table never rewritten, before its first plan): a sample of
   its small files' rows encoded as the writer would, at two sizes, and the rate carried
   to a file of the target size (:func:`extrapolated_rate`);
2. ``full files``: the table's files near the target (written in bulk, or merged
   earlier): Σ bytes / Σ rows;
3. ``slope``: the least-squares slope of size on rows over the table's files. A small
   file costs a fixed part (footer, dictionaries, page headers) plus a part per row; a
   merge pays the fixed part once, so the slope is what a merged row costs. On the order
   lines above it was within 4% of the merged rate, where the mean was 10% over;
4. none: merged bytes are taken equal to sizes (the model before this one).

A file's merged bytes are never taken above its size: a merge that would grow its rows is
outside the model, and predicting it would split groups that fit one file.

The writer closes files by what it has written (:class:`OutputSplit`): a group's first
file gets its share of the rows at the predicted rate, and every later file's share is
taken from the bytes per row the group's files so far really took. A wrong prediction
then costs at most the first file's size, not every file's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from icefloe.optimizer.entropy import predict_output_sizes

RECENT_REWRITES = 5
"""How many of the newest rewrites the rate is taken over (weighted by their rows)."""

NEAR_TARGET = 0.75
"""Files at or above this fraction of the target count as full files (Iceberg's minimum
file size ratio)."""

MIN_SLOPE_FILES = 3
"""Files (of at least two distinct row counts) needed for a slope."""

SLOPE_FLOOR = 0.25
"""The slope is not taken under this fraction of the files' mean bytes per row: a fit over
a few files of nearly equal rows can swing far."""


@dataclass(frozen=True, slots=True)
class BytesPerRow:
    """The bytes a merged row takes in a table, and where that figure came from."""

    value: float
    source: str  # rewrites | sample | full files | slope

    def __post_init__(self) -> None:
        if not self.value > 0:
            raise ValueError(f"bytes per row must be > 0, got {self.value}")


def _rate(pairs: Iterable[tuple[int, int]]) -> float | None:
    total_bytes = total_rows = 0
    for size, rows in pairs:
        total_bytes += size
        total_rows += rows
    return total_bytes / total_rows if total_rows > 0 and total_bytes > 0 else None


def size_slope(sizes: Sequence[int], records: Sequence[int]) -> float | None:
    """Least-squares slope of file size on row count (bytes per additional row), floored
    at :data:`SLOPE_FLOOR` of the mean rate; None for fewer than :data:`MIN_SLOPE_FILES`
    files with rows, one distinct row count, or a slope that is not positive."""
    pairs = [(s, r) for s, r in zip(sizes, records, strict=True) if r > 0]
    if len(pairs) < MIN_SLOPE_FILES or len({r for _, r in pairs}) < 2:
        return None
    n = len(pairs)
    mean_rows = sum(r for _, r in pairs) / n
    mean_size = sum(s for s, _ in pairs) / n
    spread = sum((r - mean_rows) ** 2 for _, r in pairs)
    slope = sum((r - mean_rows) * (s - mean_size) for s, r in pairs) / spread
    if not slope > 0:
        return None
    mean_rate = mean_size / mean_rows
    return min(mean_rate, max(slope, SLOPE_FLOOR * mean_rate))


def bytes_per_row(
    rewrites: Sequence[tuple[int, int]],
    sizes: Sequence[int],
    records: Sequence[int],
    target: int,
) -> BytesPerRow | None:
    """The table's merged bytes per row (module doc), or None when nothing tells.

    ``rewrites``: (bytes, rows) each rewrite added, newest first; ``sizes`` and
    ``records``: the table's current data files."""
    recent = _rate((b, r) for b, r in rewrites[:RECENT_REWRITES] if b > 0 and r > 0)
    if recent is not None:
        return BytesPerRow(recent, "rewrites")
    floor = NEAR_TARGET * target
    full = _rate((s, r) for s, r in zip(sizes, records, strict=True) if s >= floor)
    if full is not None:
        return BytesPerRow(full, "full files")
    slope = size_slope(sizes, records)
    return None if slope is None else BytesPerRow(slope, "slope")


def extrapolated_rate(half: tuple[int, int], whole: tuple[int, int], target: int) -> float:
    """Bytes per row of a file of ``target`` bytes, from two encodings of the same rows'
    first half and all of them, ``(rows, bytes)`` each: a file costs a fixed part and a
    part per row, so the two give both, and a file of the target holds
    ``(target - fixed) / per_row`` rows. The whole's own rate when it already reaches the
    target, or when the two disagree with that model (more rows, no more bytes; a fixed
    part of a target or more)."""
    (r1, b1), (r2, b2) = half, whole
    own = b2 / r2
    if r2 <= r1 or b2 <= b1 or b2 >= target:
        return own
    per_row = (b2 - b1) / (r2 - r1)
    fixed = b2 - per_row * r2
    return own if fixed >= target else per_row * target / (target - fixed)


def group_bytes(sizes: Iterable[int], merged: Iterable[int]) -> int:
    """What a group of files writes: their merged bytes, and never less than its largest
    input. The rate is a target-sized file's; a group far under the target pays a file's
    fixed part (footer, dictionaries) that the rate spreads thin, and four files of
    1.5 kB predicted as one of 1.2 kB would make the merge look like it lowers nothing."""
    return max(sum(merged), max(sizes, default=0))


def merged_sizes(
    sizes: Sequence[int], records: Sequence[int], rate: BytesPerRow | None
) -> list[int]:
    """Each file's bytes once merged: its rows at ``rate``, at least 1 and at most its
    size; its size when ``rate`` is None."""
    if rate is None:
        return list(sizes)
    return [max(1, min(s, round(r * rate.value))) for s, r in zip(sizes, records, strict=True)]


class OutputSplit:
    """How many rows each output file of one group gets, decided as the files are written.

    ``rows``: the group's rows; ``predicted``: the bytes it is predicted to write (0: not
    known); ``target``: the target file size (0: rows spread evenly over ``files``);
    ``files``: the most files it may write (its planned output locations). Before each
    file, the rows left are cut into the files :func:`icefloe.optimizer.predict_output_sizes` makes
    of them (even files, or files of the target and one remainder; never more than the
    locations left) at the latest rate: the prediction until a file is written, then the
    bytes per row of what was written (with no prediction, the first file gets an even
    share). Call :meth:`wrote` after each file."""

    def __init__(self, rows: int, predicted: int, target: int, files: int) -> None:
        if files < 1:
            raise ValueError(f"a group needs at least one output file, got {files}")
        self.rows_left, self.files_left, self.target = rows, files, target
        self.rate = predicted / rows if predicted > 0 and rows > 0 else None
        self.written_bytes = self.written_rows = 0

    def _sizes(self) -> list[int] | None:
        """The files the rows left make at the latest rate (:func:`predict_output_sizes`),
        or None while neither a rate nor a target is known."""
        if self.rate is None or self.target <= 0:
            return None
        return predict_output_sizes(max(1, round(self.rows_left * self.rate)), self.target)

    @property
    def files(self) -> int:
        """How many files the rows left make (at least 1, at most the locations left)."""
        sizes = self._sizes()
        return self.files_left if sizes is None else max(1, min(self.files_left, len(sizes)))

    def next_rows(self) -> int:
        """Rows for the next file: its share of the predicted sizes at the latest rate (the
        rows left over the locations left when there is no rate, or no room for them)."""
        sizes = self._sizes()
        if sizes is None or len(sizes) > self.files_left:
            return max(1, math.ceil(self.rows_left / self.files_left))
        if len(sizes) <= 1:
            return max(1, self.rows_left)
        assert self.rate is not None
        return max(1, min(self.rows_left, math.ceil(sizes[0] / self.rate)))

    def wrote(self, rows: int, size: int) -> None:
        """A file of ``rows`` rows and ``size`` bytes was written."""
        self.rows_left -= rows
        self.files_left = max(1, self.files_left - 1)
        self.written_bytes += size
        self.written_rows += rows
        if self.written_rows > 0 and self.written_bytes > 0:
            self.rate = self.written_bytes / self.written_rows
