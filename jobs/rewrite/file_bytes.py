"""A data file's bytes as the Arrow engine reads them: whole, in one request; whether a
file holds exactly the table's columns (:func:`plain_readable`); and the footer of a file
it wrote (:class:`Footer`), which the commit's ``DataFile`` metrics are parsed from
(:mod:`icefloe.jobs.rewrite.new_files`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from icefloe.jobs.rewrite.float_metrics import FloatMetrics, float_metrics

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.io import FileIO


class VerificationError(Exception):
    """A written file does not hold exactly the rows it was given."""


@dataclass(frozen=True)
class Footer:
    """A written file's size and its Parquet footer (the Thrift ``FileMetaData`` bytes),
    and the metrics of its floating-point columns that Iceberg's writer counts and a
    footer does not hold (NaNs: :mod:`icefloe.jobs.rewrite.float_metrics`)."""

    size: int
    metadata: bytes
    floats: tuple[FloatMetrics, ...] = ()

    @classmethod
    def of(cls, data: bytes, path: str, rows: pa.Table | None = None) -> Footer:
        """The footer of the whole bytes of the Parquet file at ``path``: ``... FileMetaData,
        its length as 4 bytes little-endian, PAR1``; ``rows``: what the file was written
        from, its floating-point columns counted."""
        if len(data) < 12 or data[-4:] != b"PAR1":
            raise VerificationError(f"{path}: not a Parquet file (no PAR1 at its end)")
        n = int.from_bytes(data[-8:-4], "little")
        if n <= 0 or n > len(data) - 12:
            raise VerificationError(f"{path}: a Parquet footer of {n} bytes in {len(data)}")
        floats = () if rows is None else float_metrics(rows)
        return cls(len(data), data[-8 - n : -8], floats)


def whole(io: FileIO, path: str) -> bytes:
    """The bytes of the file at ``path``, read in one request. Parquet's footer and columns
    then come from memory: on object storage two requests (the size, then the bytes) where
    a footer read and then column reads make three or more; a rewrite reads every byte of
    its inputs anyway."""
    with io.new_input(path).open() as f:
        data: bytes = f.read()
    return data


def parquet_of(data: bytes) -> pq.ParquetFile:
    """A Parquet file read from its whole bytes in memory."""
    import pyarrow as pa  # pyarrow: only when files are read or written
    import pyarrow.parquet as pq

    return pq.ParquetFile(pa.BufferReader(data))


FIELD_ID = b"PARQUET:field_id"
_OFFSETS = {("large_string", "string"), ("large_binary", "binary")}


def plain_readable(got: pa.Schema, want: pa.Schema) -> bool:
    """Does a file whose Arrow schema is ``got`` hold exactly the columns ``want``? Names,
    field ids, nullability and types must be the same (nested fields' ids included); the
    one difference allowed is 64- against 32-bit offsets of top-level strings and
    binaries (a cast that changes no value)."""
    if got.names != want.names:
        return False
    for g, w in zip(got, want, strict=True):
        if (g.metadata or {}).get(FIELD_ID) != (w.metadata or {}).get(
            FIELD_ID
        ) or g.nullable != w.nullable:
            return False
        if not (
            g.type.equals(w.type, check_metadata=True) or (str(g.type), str(w.type)) in _OFFSETS
        ):
            return False
    return True
