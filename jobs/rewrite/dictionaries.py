"""Which columns of a file the Arrow engine dictionary-encodes: the ones Iceberg's writer would.

parquet-mr (Spark's Iceberg writer) starts every column chunk with dictionary encoding and
falls back to plain encoding when, at the end of the first page, the dictionary plus the
encoded indices are not smaller than the plain values (``FallbackValuesWriter``'s
``isCompressionSatisfying``), or when the dictionary outgrows ``dict-size-bytes``.
pyarrow keeps the dictionary until the size limit only: a column of nearly unique values
(ids, timestamps, hashes) is then written as a dictionary page plus indices, and a merged
file came out 15-20% larger than the same rows written by Iceberg's compaction (and every
later merge rewrote those extra bytes).

:func:`dictionary_columns` makes parquet-mr's choice from the first page's rows of a chunk
before it is written: a leaf column keeps its dictionary when ``dictionary + indices <
plain`` on those rows. Nested columns (structs, lists, maps) keep pyarrow's default.

Runs where :mod:`icefloe.jobs.rewrite.arrow_engine` runs: pyarrow and the standard library only.
"""

from __future__ import annotations

import io
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

FIRST_PAGE_ROWS = 20_000
"""Rows parquet-mr's first page holds at most (``write.parquet.page-row-limit``'s default)."""


def dictionary_columns(chunk: pa.Table, page_rows: int = FIRST_PAGE_ROWS) -> list[str]:
    """The Parquet column paths of ``chunk`` to write with a dictionary (pyarrow's
    ``use_dictionary``): every leaf of a nested column, and each flat column whose first
    ``page_rows`` values take fewer bytes as a dictionary and indices than plain."""
    out: list[str] = []
    for name, paths in leaf_paths(chunk.schema).items():
        column = chunk.column(name)
        if len(paths) > 1 or paths[0] != name or _dictionary_pays(column, page_rows):
            out.extend(paths)
    return out


def _dictionary_pays(column: pa.ChunkedArray, page_rows: int) -> bool:
    # pyarrow: only when files are read or written
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.cast(kind.value_type), kind.value_type
    if pa.types.is_boolean(kind):
        return False  # Parquet has no dictionary for booleans
    if not (_is_binary(kind) or isinstance(kind, pa.FixedSizeBinaryType) or _fixed(kind)):
        return True
    values = pc.drop_null(column.slice(0, page_rows))
    if len(values) == 0:
        return True
    distinct = pc.unique(values)
    width = max(1, (len(distinct) - 1).bit_length())
    indices = (len(values) * width + 7) // 8
    return _plain_bytes(distinct) + indices < _plain_bytes(values)


def _is_binary(kind: pa.DataType) -> bool:
    # pyarrow: only when files are read or written
    import pyarrow as pa

    return bool(
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    )


def _fixed(kind: pa.DataType) -> bool:
    try:
        return int(kind.bit_width) > 0
    except ValueError:  # not a fixed-width type
        return False


def _plain_bytes(values: pa.Array | pa.ChunkedArray) -> int:
    """Bytes of ``values`` (no nulls) in Parquet's plain encoding."""
    # pyarrow: only when files are read or written
    import pyarrow.compute as pc

    if _is_binary(values.type):
        lengths = pc.sum(pc.binary_length(values)).as_py() or 0
        return int(lengths) + 4 * len(values)  # a 4-byte length before each value
    return len(values) * max(1, int(values.type.bit_width) // 8)


@lru_cache(maxsize=32)
def leaf_paths(schema: pa.Schema) -> dict[str, tuple[str, ...]]:
    """Each top-level column's Parquet leaf column paths (``a``, or ``a.list.element``),
    as the Parquet writer names them (the schema of an empty file written with it)."""
    # pyarrow: only when files are read or written
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, schema=schema) as writer:
        writer.write_table(schema.empty_table())
    parquet = pq.read_metadata(io.BytesIO(buffer.getvalue())).schema
    out: dict[str, list[str]] = {name: [] for name in schema.names}
    longest_first = sorted(out, key=len, reverse=True)  # a name may hold dots
    for i in range(len(parquet)):
        path = parquet.column(i).path
        owner = next(n for n in longest_first if path == n or path.startswith(f"{n}."))
        out[owner].append(path)
    return {name: tuple(paths) for name, paths in out.items()}
