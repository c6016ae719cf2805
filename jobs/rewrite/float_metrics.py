"""The metrics of a data file's floating-point columns that Iceberg's Parquet writer counts
as it writes, and a Parquet footer does not hold.

Iceberg's writer counts every ``float`` and ``double`` column's values itself
(``FloatFieldMetrics``, ``DoubleFieldMetrics``) and hands the counts to
``ParquetUtil.footerMetrics`` with the footer: that is where a data file's
``nan_value_counts`` come from, and its bounds of such columns (NaN left out, ``-0.0``
below ``0.0``, as Java's ``Float.compare`` orders them). A file whose metrics come from its
footer alone has no NaN counts. :func:`float_metrics` counts the same from the rows a file
was written from, so the Arrow engine's files carry what Iceberg's writer records
(:mod:`icefloe.jobs.rewrite.new_files` gives them to ``footerMetrics``).

Like Iceberg's metrics, it covers top-level columns and fields of structs (a struct's
nulls count as its fields' nulls), not the elements of lists or maps.

This module runs in Spark's Python workers: pyarrow only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

FIELD_ID = b"PARQUET:field_id"


@dataclass(frozen=True)
class FloatMetrics:
    """One floating-point column's counts and bounds in one file, as Iceberg's writer
    counts them. ``lower``/``upper``: the least and greatest value that is not NaN (None
    when every value is null or NaN); ``double``: a 64-bit column (else 32-bit)."""

    field_id: int
    double: bool
    values: int  # nulls included
    nulls: int
    nans: int
    lower: float | None
    upper: float | None


def float_metrics(rows: pa.Table) -> tuple[FloatMetrics, ...]:
    """The :class:`FloatMetrics` of every ``float`` and ``double`` column of ``rows`` (a
    file's rows, its fields carrying their Iceberg field ids) that Iceberg keeps metrics
    of."""
    import pyarrow as pa  # pyarrow: only when files are read or written

    out: list[FloatMetrics] = []
    for field, column in zip(rows.schema, rows.columns, strict=True):
        for child, values in _leaves(field, column.chunks):
            field_id = int((child.metadata or {}).get(FIELD_ID, b"0"))
            if field_id > 0:
                out.append(_measure(field_id, pa.types.is_float64(child.type), values))
    return tuple(out)


def _leaves(field: pa.Field, chunks: list[Any]) -> Iterator[tuple[pa.Field, list[Any]]]:
    """The floating-point fields under ``field`` (itself, or a struct's fields, at any
    depth) and their values, a struct's nulls made its fields' nulls."""
    import pyarrow as pa  # pyarrow: only when files are read or written

    if pa.types.is_floating(field.type):
        yield field, chunks
    elif pa.types.is_struct(field.type):
        flat = [chunk.flatten() for chunk in chunks]  # the struct's validity merged in
        for i in range(field.type.num_fields):
            yield from _leaves(field.type.field(i), [f[i] for f in flat])


def _measure(field_id: int, double: bool, chunks: list[Any]) -> FloatMetrics:
    """Counts and bounds of one column's values (``chunks`` of Arrow arrays)."""
    import numpy as np  # with pyarrow: only when files are read or written
    import pyarrow as pa
    import pyarrow.compute as pc

    values = pa.chunked_array(chunks, type=pa.float64() if double else pa.float32())
    is_nan = pc.is_nan(values)  # null where the value is null
    nans = int(pc.sum(is_nan).as_py() or 0)
    numbers = pc.filter(values, pc.invert(is_nan)).to_numpy()  # nulls dropped too
    lower = upper = None
    if numbers.size:
        lower, upper = float(numbers.min()), float(numbers.max())
        zeros = np.signbit(numbers[numbers == 0])
        # Java orders -0.0 below 0.0; numpy takes them as equal and returns either
        if lower == 0:
            lower = -0.0 if zeros.any() else 0.0
        if upper == 0:
            upper = -0.0 if zeros.all() else 0.0
    return FloatMetrics(field_id, double, len(values), values.null_count, nans, lower, upper)
