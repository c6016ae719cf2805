"""A declared write order as a row order, for both rewrite engines.

:class:`icefloe.base.sortorder.SortField` says, per field, the column, its transform, its
direction and its null order. The Arrow engine sorts a group's rows with
:func:`row_order`; Spark's writer sorts by :func:`spark_order`'s columns. Each field's key
is the column itself when its transform keeps order (identity, truncate, year … hour),
else the transformed value (``bucket[N]``: Iceberg's own bucket function, computed by
PyIceberg on Arrow arrays: :func:`bucket_keys`; Spark calls it through a scalar Arrow UDF,
so both engines write the same order). NaN sorts above every number in both, as
Iceberg's comparators (and Spark's ``ORDER BY``) order it: Arrow is told so by a key of its
own (:func:`row_order`).

Imported where rows are ordered (both engines' tasks): pyarrow at the top.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.optimizer.sortorder import SortField, arrow_sort_keys

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

KEY = "__icefloe_sort_{}"
"""The temporary key column of a field whose transform does not keep order."""


def bucket_keys(column: pa.Array | pa.ChunkedArray, buckets: int) -> pa.Array:
    """Iceberg's ``bucket[buckets]`` of each value (null for null), as PyIceberg's
    transform computes it."""
    # pyiceberg: its Arrow type mapping and transforms, only where a bucket field sorts
    from pyiceberg.io.pyarrow import _pyarrow_to_schema_without_ids
    from pyiceberg.transforms import BucketTransform

    kind = _pyarrow_to_schema_without_ids(pa.schema([("v", column.type)])).fields[0].field_type
    out = BucketTransform(buckets).pyarrow_transform(kind)(column)
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def row_order(table: pa.Table, fields: Sequence[SortField]) -> pa.Array:
    """The indices that put ``table``'s rows in the order of ``fields`` (stable). Arrow
    places NaN with the nulls (first when nulls go first); a float field is therefore
    keyed by whether the value is NaN first, then by the value."""
    names: list[str] = []
    keyed: list[SortField] = []
    for i, f in enumerate(fields):
        column = table.column(f.column)
        if not f.by_column:
            buckets = f.bucket
            if buckets is None:
                raise ValueError(f"no row order for sort field {f}")
            table = table.append_column(KEY.format(i), bucket_keys(column, buckets))
        elif pa.types.is_floating(column.type):
            table = table.append_column(KEY.format(f"nan_{i}"), pc.is_nan(column))
            names.append(KEY.format(f"nan_{i}"))
            keyed.append(f)
        names.append(f.column if f.by_column else KEY.format(i))
        keyed.append(f)
    return pc.sort_indices(table, sort_keys=arrow_sort_keys(keyed, names))


def sorted_batches(
    batches: Iterator[pa.RecordBatch], fields: Sequence[SortField]
) -> Iterator[pa.RecordBatch]:
    """A group's rows in the order of ``fields`` (:func:`row_order`)."""
    parts = [pa.Table.from_batches([b]) for b in batches]
    if parts:
        whole = pa.concat_tables(parts, promote_options="permissive")
        yield from whole.take(row_order(whole, fields)).to_batches()


def spark_order(
    df: DataFrame, fields: Sequence[SortField], quote: Any
) -> tuple[DataFrame, list[Column], list[str]]:
    """``df`` with a key column per bucket field, the sort expressions of ``fields``
    (direction and null order each), and the key columns to drop after the sort."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    exprs: list[Column] = []
    temporary: list[str] = []
    for i, f in enumerate(fields):
        if f.by_column:
            col = F.col(quote(f.column))
        else:
            buckets = f.bucket
            if buckets is None:
                raise ValueError(f"no row order for sort field {f}")

            name = KEY.format(i)
            udf = arrow_udf(_bucket_udf(buckets), IntegerType())  # type: ignore[call-overload]
            df = df.withColumn(name, udf(F.col(quote(f.column))))
            col, temporary = F.col(name), [*temporary, name]
        if f.descending:
            exprs.append(col.desc_nulls_first() if f.nulls_first else col.desc_nulls_last())
        else:
            exprs.append(col.asc_nulls_first() if f.nulls_first else col.asc_nulls_last())
    return df, exprs, temporary


def _bucket_udf(buckets: int) -> Any:
    """A scalar Arrow UDF body (typed by its hints) of :func:`bucket_keys`."""

    def keys(values: pa.Array) -> pa.Array:
        return bucket_keys(values, buckets)

    return keys
