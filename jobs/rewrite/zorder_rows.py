"""Z-order as a row order: :mod:`icefloe.optimizer.zorder`'s keys, vectorized over Arrow columns.

Both rewrite engines order a z-order group's rows by the same key: the Arrow engine sorts
the group's rows by it and cuts them into files at the curve's cell edges
(:func:`zordered_files`, the keys computed once for both), Spark's writer by a temporary
column that an Arrow UDF computes with :func:`keys_of` (:mod:`icefloe.jobs.rewrite.spark_engine`).
Row for row, the key equals ``icefloe.optimizer.zorder.zorder_bytes([ordered_value(v) for v in
row])``, the bytes Iceberg's ``ZOrderByteUtils`` produce: each column mapped to an unsigned 64-bit
integer of the same order, then their bits interleaved, column 0's most significant bit
first, into ``8 · k`` big-endian bytes.

The mapping, per Arrow type (as ``ordered_value`` maps the Python values of each):

* integers, booleans, dates (days since 1970-01-01) and timestamps (microseconds since
  the epoch; other units converted, nanoseconds rounded down): 64-bit two's complement,
  sign bit flipped;
* floating point: the double's IEEE 754 bits, sign bit flipped for positives, every bit
  flipped for negatives;
* strings (UTF-8) and binaries: the first 8 bytes, right-padded with zeros, big endian;
* null: 0 (nulls first).

Any other type (decimals, times, nested types) raises ``TypeError``, as ``ordered_value``
does. Each column becomes one ``uint64`` numpy array; the bits are spread with a lookup
table, up to 16 bits of a column at a time, into ``k`` ``uint64`` words per row.

Imported where rows are ordered (both engines' tasks): pyarrow and numpy at the top.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.optimizer.zorder import ZORDER_BITS

Column: TypeAlias = "pa.Array | pa.ChunkedArray"
Words: TypeAlias = list[Any]  # k uint64 numpy arrays, the key's least significant word first

_SIGN = np.uint64(1 << 63)
_PREFIX = ZORDER_BITS // 8  # bytes of a string or binary that count
_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1}
_DAY_MS = 86_400_000


def zorder_keys(table: pa.Table, columns: Sequence[str]) -> pa.Array:
    """Each row's z-order key over ``columns``: ``fixed_size_binary(8 · k)``, big endian."""
    return keys_of([table.column(c) for c in columns])


def zorder_sort_indices(table: pa.Table, columns: Sequence[str]) -> pa.Array:
    """The indices that put ``table``'s rows in ascending z-order key (a stable sort: rows
    with equal keys keep their order)."""
    return _sort_words(_interleave([ordered(table.column(c)) for c in columns]))


def _sort_words(words: Words) -> pa.Array:
    """The indices that put keys given as words in ascending order, stably."""
    # Arrow's stable sort over the words, most significant first (numpy's lexsort: ~4x slower)
    named = pa.table({f"w{i}": word for i, word in enumerate(reversed(words))})
    return pc.sort_indices(named, sort_keys=[(name, "ascending") for name in named.column_names])


def _whole(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """A stream of batches as one table (no copy: its chunks), ``None`` without rows."""
    parts = [pa.Table.from_batches([b]) for b in batches]
    return pa.concat_tables(parts, promote_options="permissive") if parts else None


def keys_of(columns: Sequence[Column]) -> pa.Array:
    """The z-order keys of rows whose values are ``columns`` (arrays of equal length)."""
    words = _interleave([ordered(c) for c in columns])
    k, n = len(words), len(words[0])
    out = np.empty((n, k), dtype=">u8")  # big endian, the most significant word first
    for i, word in enumerate(words):
        out[:, k - 1 - i] = word
    return pa.Array.from_buffers(pa.binary(8 * k), n, [None, pa.py_buffer(out.tobytes())])


def spark_keys(*columns: pa.Array) -> pa.Array:
    """:func:`keys_of` as Spark's Arrow UDF returns a ``BinaryType``: variable width."""
    return keys_of(columns).cast(pa.binary())


def ordered(column: Column) -> Any:
    """``column`` mapped to ``uint64`` values of the same order (module doc), as a numpy
    array; nulls are 0."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    kind = array.type
    if pa.types.is_null(kind):
        return np.zeros(len(array), np.uint64)
    if pa.types.is_floating(kind):
        raw = _numbers(array.cast(pa.float64()), 0.0).view(np.uint64)
        values = np.where(raw >> np.uint64(63) != 0, ~raw, raw | _SIGN)
    elif pa.types.is_string(kind) or pa.types.is_binary(kind) or _binary_like(kind):
        values = _prefixes(array.cast(pa.large_binary()))
    else:
        values = _signed(array).view(np.uint64) ^ _SIGN
    if array.null_count:
        values[~array.is_valid().to_numpy(zero_copy_only=False)] = 0
    return values


def _binary_like(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_large_string(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_string_view(kind)
        or pa.types.is_binary_view(kind)
        or pa.types.is_fixed_size_binary(kind)
    )


def _numbers(array: pa.Array, fill: Any) -> Any:
    """A numpy copy of a numeric array, nulls as ``fill``."""
    return np.array(array.fill_null(fill).to_numpy(zero_copy_only=False))


def _signed(array: pa.Array) -> Any:
    """The ``int64`` a signed-ordered type stands for: integers and booleans as they are,
    dates in days, timestamps in microseconds since the epoch."""
    kind = array.type
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        return _numbers(array.cast(pa.int64()), 0)  # uint64 beyond int64: ArrowInvalid
    if pa.types.is_date32(kind):
        return _numbers(array.cast(pa.int32()).cast(pa.int64()), 0)
    if pa.types.is_date64(kind):
        return _numbers(array.cast(pa.int64()), 0) // _DAY_MS
    if pa.types.is_timestamp(kind):
        raw = _numbers(array.cast(pa.int64()), 0)
        if kind.unit == "ns":
            return raw // 1_000
        return raw * _MICROS[kind.unit]
    raise TypeError(f"no z-order mapping for a column of type {kind}")


def _prefixes(array: pa.Array) -> Any:
    """A ``large_binary`` array's first 8 bytes per value, zero-padded, as big-endian
    ``uint64`` (read from its offsets and data buffers)."""
    n = len(array)
    if n == 0:
        return np.zeros(0, np.uint64)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[array.offset : array.offset + n + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    values = np.zeros(n, np.uint64)
    for j in range(_PREFIX):
        has = lengths > j
        byte = np.zeros(n, np.uint64)
        byte[has] = data[starts[has] + j]
        values |= byte << np.uint64(8 * (_PREFIX - 1 - j))
    return values


@cache
def _spread(columns: int, width: int) -> Any:
    """For each value of ``width`` bits, its bits moved apart: bit ``i`` to ``i · columns``."""
    values = np.arange(1 << width, dtype=np.uint64)
    out = np.zeros(1 << width, np.uint64)
    for i in range(width):
        out |= ((values >> np.uint64(i)) & np.uint64(1)) << np.uint64(i * columns)
    return out


def _interleave(columns: Sequence[Any]) -> Words:
    """The interleaved bits of ``k`` ``uint64`` columns as ``k`` words per row.

    Bit ``b`` of column ``c`` lands at bit ``b·k + (k-1-c)`` of the key (as
    ``icefloe.optimizer.zorder.zorder_key``). A column is spread ``width`` bits at a time, the
    widest run whose spread fits one word (at most 16: a 64 K-entry table); a spread run
    that crosses a word boundary is split between the two words."""
    k = len(columns)
    if k == 0:
        raise ValueError("a z-order key needs at least one column")
    n = len(columns[0])
    width = min(16, 1 + (ZORDER_BITS - 1) // k)
    table = _spread(k, width)
    mask = np.uint64((1 << width) - 1)
    words = [np.zeros(n, np.uint64) for _ in range(k)]
    for c, values in enumerate(columns):
        for low in range(0, ZORDER_BITS, width):
            spread = table[(values >> np.uint64(low)) & mask]
            word, shift = divmod(low * k + (k - 1 - c), 64)
            words[word] |= spread << np.uint64(shift)
            if shift and word + 1 < k:
                words[word + 1] |= spread >> np.uint64(64 - shift)
    return words


CUT_SLACK = 0.25
"""How far (a share of one file's rows) a z-ordered file's end may move to a cell edge."""


def cut_levels(words: Words) -> Any:
    """For each boundary between consecutive rows (``n - 1`` of them), the highest key bit
    that differs across it (``-1`` where the keys are equal): the level of the z-order
    cell edge that lies between the two rows."""
    n = len(words[0]) if words else 0
    level = np.full(max(0, n - 1), -1, np.int64)
    for index, word in enumerate(words):  # least significant first: later words win
        diff = word[1:] ^ word[:-1]
        length = np.zeros(len(diff), np.int64)
        for shift in (32, 16, 8, 4, 2, 1):  # bit_length, exact for 64-bit words
            high = (diff >> np.uint64(shift)) != 0
            length += np.where(high, shift, 0)
            diff = np.where(high, diff >> np.uint64(shift), diff)
        length += (diff != 0).astype(np.int64)
        level = np.where(length > 0, 64 * index + length - 1, level)
    return level


def aligned_cuts(words: Words, files: int, slack: float = CUT_SLACK) -> list[int]:
    """Where to cut ``n`` rows in z-order into ``files`` files: each cut near an equal share
    (``i · n / files``), moved within ``slack`` of a share to the boundary that crosses the
    highest key bit (ties: the nearest); every file keeps within ``slack`` of a share. A cut
    at a coarse cell edge keeps the files' bounding boxes apart, which a cut by row count
    alone does not: a file that straddles two cells of the curve has a box over both, and
    overlaps its neighbour's."""
    n = len(words[0]) if words else 0
    if files <= 1 or n <= 1:
        return []
    level = cut_levels(words)  # level[j - 1]: the boundary before row j
    share = n / files
    reach = int(slack * share)
    cuts: list[int] = []
    for i in range(1, files):
        nominal, prev = round(i * share), cuts[-1] if cuts else 0
        # within reach of the share's edge and of the last cut: every file within the slack
        lo = max(nominal - reach, prev + math.ceil((1 - slack) * share), prev + 1)
        hi = min(nominal + reach, prev + int((1 + slack) * share), n - (files - i))
        if lo > hi:  # a share of a row or two: by row count, one row a file at least
            cuts.append(max(prev + 1, min(nominal, n - (files - i))))
            continue
        window = level[lo - 1 : hi]
        best = int(window.max())
        ties = np.flatnonzero(window == best) + lo
        cuts.append(int(ties[np.argmin(np.abs(ties - nominal))]))
    return sorted({c for c in cuts if 0 < c < n})  # more files than rows: one row each


def zordered_files(
    batches: Iterator[pa.RecordBatch], columns: Sequence[str], files: int
) -> Iterator[pa.Table]:
    """A group's rows in z-order over ``columns``, as ``files`` tables cut at
    :func:`aligned_cuts` (fewer when there are fewer rows than files). The keys are
    computed once: they sort the rows, and (taken in the same order) place the cuts."""
    whole = _whole(batches)
    if whole is None:
        return
    words = _interleave([ordered(whole.column(c)) for c in columns])
    order = _sort_words(words)
    whole = whole.take(order)  # the rows as read are let go here
    at = order.to_numpy()
    words = [word[at] for word in words]
    del order, at
    edges = [0, *aligned_cuts(words, files), whole.num_rows]
    for start, end in zip(edges, edges[1:], strict=False):
        if end > start:
            yield whole.slice(start, end - start)
