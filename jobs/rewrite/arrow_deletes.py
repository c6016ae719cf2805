"""Position deletes for the Arrow engine: the rows Iceberg's readers no longer see.

A merge-on-read ``DELETE`` writes Parquet *position delete* files: rows of
(``file_path``, ``pos``), each naming one row of one data file by its 0-based ordinal.
A data file's live rows are its rows minus the positions that any position delete file
applying to it names for its path. A rewrite must write exactly those rows; the commit
then drops the delete files left dangling (``icefloe.jobs.rewrite.tasks``).

Only Parquet position delete files are read here; a group with any other delete file
(equality deletes, deletion vectors in Puffin files) is not eligible for the Arrow engine
and goes to Spark, whose Iceberg reader applies every kind.

This module runs in Spark's Python workers: no SparkSession, no py4j, no ``service``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.io import FileIO

FILE_PATH, POS = "file_path", "pos"  # Iceberg's reserved columns (field ids 2147483546/5)


class DeleteIndex:
    """The position delete files of one group, each read once."""

    def __init__(self, io: FileIO) -> None:
        self.io = io
        self._read: dict[str, pa.Table] = {}

    def _table(self, path: str) -> pa.Table:
        # pyarrow: only when files are read or written
        import pyarrow.parquet as pq

        if path not in self._read:
            with self.io.new_input(path).open() as f:
                self._read[path] = pq.ParquetFile(f).read(columns=[FILE_PATH, POS])
        return self._read[path]

    def positions(self, data_path: str, delete_paths: Sequence[str], records: int) -> pa.Array:
        """The distinct row positions of ``data_path`` (``records`` rows) that the delete
        files name, sorted; positions outside the file name no row and are left out."""
        # pyarrow: only when files are read or written
        import pyarrow as pa
        import pyarrow.compute as pc

        found = [pa.array([], pa.int64())]
        for path in delete_paths:
            deletes = self._table(path)
            mine = deletes.filter(pc.equal(deletes.column(FILE_PATH), data_path))
            found.extend(c.cast(pa.int64()) for c in mine.column(POS).chunks)
        every = pc.unique(pa.chunked_array(found, pa.int64()).combine_chunks())
        inside = every.filter(pc.and_(pc.greater_equal(every, 0), pc.less(every, records)))
        return inside.take(pc.array_sort_indices(inside))


FEW = 64  # deleted rows in a batch up to which the rest is sliced out, not filtered
_ROW_NUMBERS: list[pa.Array] = []  # the longest 0..n-1 built so far in this process


def _row_numbers(n: int) -> pa.Array:
    """0, 1, ..., n-1 as int64, built in Arrow (a running sum of ones) and kept for reuse:
    ``pa.array(range(n))`` would cost ~0.1 µs a row in Python."""
    # pyarrow: only when files are read or written
    import pyarrow as pa
    import pyarrow.compute as pc

    numbers = _ROW_NUMBERS[-1] if _ROW_NUMBERS else None  # groups run on several threads:
    if numbers is None or len(numbers) < n:  # slice only what this call holds
        ones = pa.nulls(max(n, 1 << 17), pa.int64()).fill_null(1)
        numbers = pc.subtract(pc.cumulative_sum(ones), 1)
        _ROW_NUMBERS[:] = [numbers]
    return numbers.slice(0, n)


def _within(positions: pa.Array, start: int, end: int) -> pa.Array:
    """The positions in ``[start, end)``, shifted to start at 0."""
    # pyarrow: only when files are read or written
    import pyarrow.compute as pc

    mask = pc.and_(pc.greater_equal(positions, start), pc.less(positions, end))
    return pc.subtract(positions.filter(mask), start)


def drop_positions(batches: Sequence[pa.RecordBatch], positions: pa.Array) -> list[pa.RecordBatch]:
    """``batches`` (one data file's rows, in file order) without the rows at ``positions``
    (file-wide 0-based ordinals, distinct).

    Pure Arrow: this runs in the executors' Python, whose packed archive
    (:mod:`icefloe.app.ops.pack`) holds pyarrow but not numpy."""
    # pyarrow: only when files are read or written
    import pyarrow.compute as pc

    if not len(positions):
        return list(batches)
    out: list[pa.RecordBatch] = []
    start = 0
    for batch in batches:
        end = start + batch.num_rows
        gone = _within(positions, start, end)
        if len(gone) <= FEW:  # the rows between them, as zero-copy slices
            edges = [-1, *sorted(gone.to_pylist()), batch.num_rows]
            out.extend(batch.slice(a + 1, b - a - 1) for a, b in pairwise(edges) if b > a + 1)
        else:
            rows = _row_numbers(batch.num_rows)
            out.append(batch.filter(pc.invert(pc.is_in(rows, value_set=gone))))
        start = end
    return out
