"""The Arrow engine: rewrite a file group inside a Spark task with pyarrow, proved exact.

Spark's Iceberg writer decodes every row into the JVM and encodes it again; for a plain
merge of Parquet files that is most of an actor's time (against a raw pyarrow
read + write of the same files it ran at 0.04-0.10x). This engine does the data movement
with Arrow instead (on a cluster in the Python tasks of one Spark job, the groups dealt
to as many tasks as there are cores; under a local master in the driver's threads, the
same cores without a Python worker round trip per task), and leaves the commit to the
same Java ``RewriteFiles`` path as the Spark engine (:mod:`jobs.rewrite`):

1. read the group's files through PyIceberg's ``ArrowScan`` with the table's current
   schema (field-id projection, so renamed, added and promoted columns read as Iceberg
   reads them), optionally sort them (the sort action, by the sort columns, nulls
   first, as Spark's ``sortWithinPartitions``);
2. split the rows evenly into the planned number of output files
   (``optimizer.predict_output_sizes``) and write each with PyIceberg's Parquet writer
   (the table's codec, level, page and row-group settings, Iceberg field ids);
3. **verify every file before it counts**: read it back and compare it value by value
   with the rows that were written (floating point compared by bit pattern, so a NaN
   equals itself), and check that the rows read equal the inputs' record counts. This is
   stronger than the Spark engine's order-independent checksum: equal tables imply
   equal checksums, and a row dropped, duplicated or altered anywhere fails.

Only groups this engine can do exactly are sent to it (:func:`eligible`): Parquet data
files with no delete files attached, and no more than ``MAX_IN_MEMORY_BYTES`` to hold at
once. Anything else, and any group whose Arrow task fails for any reason, goes through
the Spark engine (the caller's job); files a failed task wrote are deleted by the caller,
which knows every path in advance.

This module runs in Spark's Python workers: no SparkSession, no py4j, no ``service``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.io import FileIO
    from pyiceberg.table.metadata import TableMetadata


class VerificationError(Exception):
    """A written file does not hold exactly the rows it was given."""


@dataclass(frozen=True)
class ArrowTable:
    """What every task of one rewrite needs to know of the table."""

    metadata: TableMetadata  # slimmed: no snapshot history
    io_properties: dict[str, str]


@dataclass(frozen=True)
class ArrowGroup:
    """One file group: its inputs, and the paths of the files it may write."""

    group_id: str
    spec_id: int
    inputs: tuple[tuple[str, int], ...]  # (path, record count)
    outputs: tuple[str, ...]  # one per planned output file, in order
    sort_columns: tuple[str, ...] = ()


@dataclass
class ArrowResult:
    group_id: str
    rows_in: int = 0
    non_null: dict[str, int] = field(default_factory=dict)
    files: list[tuple[str, int]] = field(default_factory=list)  # (path, rows), verified


def slim_metadata(metadata: TableMetadata) -> TableMetadata:
    """The table's metadata without its history, for shipping to tasks."""
    return metadata.model_copy(update={
        "snapshots": [], "snapshot_log": [], "metadata_log": [], "refs": {},
        "current_snapshot_id": None, "statistics": [], "partition_statistics": [],
    })


MAX_IN_MEMORY_BYTES = 512 << 20
"""Parquet bytes a task may hold decoded at once: one output file when merging, the whole
group when sorting (Arrow sorts in memory; Spark's sort spills, so bigger sorts go there)."""


def eligible(file_format: str, paths: Sequence[str], has_deletes: bool,
             in_memory_bytes: int = 0) -> bool:
    """Can the Arrow engine rewrite this group exactly, within its memory bound?"""
    return (
        file_format == "parquet"
        and not has_deletes
        and all(p.lower().endswith(".parquet") for p in paths)
        and in_memory_bytes <= MAX_IN_MEMORY_BYTES
    )


def rows_per_file(total_rows: int, files: int) -> int:
    """Rows for each of ``files`` output files (the last may get fewer)."""
    return max(1, math.ceil(total_rows / max(1, files)))


def rewrite_groups(table: ArrowTable, groups: Sequence[ArrowGroup]) -> list[ArrowResult]:
    """One Spark task's share of the groups, one after another."""
    return [rewrite_group(table, g) for g in groups]


def rewrite_group(table: ArrowTable, group: ArrowGroup) -> ArrowResult:
    """Read, (sort), write and verify one group. Raises on any mismatch."""
    from pyiceberg.io import load_file_io

    io = load_file_io(table.io_properties, table.metadata.location)
    expected_rows = sum(n for _, n in group.inputs)
    result = ArrowResult(group.group_id)
    per_file = rows_per_file(expected_rows, len(group.outputs))
    for i, chunk in enumerate(_chunks(_read(table, io, group), per_file)):
        result.rows_in += chunk.num_rows
        if i >= len(group.outputs):  # more rows than the inputs' metadata says
            continue
        for name in chunk.column_names:
            column = chunk.column(name)
            result.non_null[name] = (result.non_null.get(name, 0)
                                     + len(column) - column.null_count)
        path = group.outputs[i]
        written = _write(table, io, path, chunk)
        _verify(io, path, written)
        result.files.append((path, written.num_rows))
    if result.rows_in != expected_rows:
        raise VerificationError(
            f"group {group.group_id}: read {result.rows_in} rows, the input files' "
            f"metadata says {expected_rows}"
        )
    if not result.files:
        result.non_null = {f.name: 0 for f in table.metadata.schema().fields}
    return result


def _read(table: ArrowTable, io: FileIO, group: ArrowGroup) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.table import FileScanTask
    from pyiceberg.typedef import Record

    tasks = []
    for path, rows in group.inputs:
        data_file = DataFile.from_args(
            content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET,
            partition=Record(), record_count=rows, file_size_in_bytes=0,
        )
        data_file.spec_id = group.spec_id
        tasks.append(FileScanTask(data_file))
    schema = table.metadata.schema()
    batches = ArrowScan(table.metadata, io, schema, AlwaysTrue()).to_record_batches(tasks)
    if not group.sort_columns:
        yield from batches
        return
    parts = [pa.Table.from_batches([b]) for b in batches]
    if parts:
        whole = pa.concat_tables(parts, promote_options="permissive")
        keys = [(c, "ascending", "at_start") for c in group.sort_columns]
        order = pc.sort_indices(whole, sort_keys=keys)
        yield from whole.take(order).to_batches()


def _chunks(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.Table]:
    """Tables of exactly ``size`` rows (the last: the rest) from a stream of batches."""
    import pyarrow as pa

    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if pending and batch.schema != pending[0].schema:  # e.g. string vs large_string
            batch = batch.cast(pending[0].schema)
        pending.append(batch)
        rows += batch.num_rows
        while rows >= size:
            whole = pa.Table.from_batches(pending)
            yield whole.slice(0, size)
            rest = whole.slice(size)
            pending, rows = rest.to_batches(), rest.num_rows
    if rows:
        yield pa.Table.from_batches(pending)


def _write(table: ArrowTable, io: FileIO, path: str, chunk: pa.Table) -> pa.Table:
    """Write ``chunk`` as one Parquet data file; returns exactly what was written."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import ParquetFormatModel, _to_requested_schema

    schema = table.metadata.schema()
    model = ParquetFormatModel()
    batches = [
        _to_requested_schema(requested_schema=schema, file_schema=schema, batch=b,
                             downcast_ns_timestamp_to_us=False, include_field_ids=True,
                             format_model=model)
        for b in chunk.to_batches()
    ]
    arrow = pa.Table.from_batches(batches)
    writer = model.create_writer(io.new_output(path), schema, table.metadata.properties)
    with writer:
        writer.write(arrow)
    return arrow


def _verify(io: FileIO, path: str, written: pa.Table) -> None:
    """The file at ``path`` holds exactly ``written``, row for row, value for value."""
    import pyarrow.parquet as pq

    with io.new_input(path).open() as f:
        back = pq.ParquetFile(f).read()
    if back.num_rows != written.num_rows:
        raise VerificationError(
            f"{path}: wrote {written.num_rows} rows, the file holds {back.num_rows}"
        )
    try:
        back = back.cast(written.schema)
    except Exception as e:
        raise VerificationError(f"{path}: the file's schema is not what was written ({e})") from e
    if not _bitwise(back).equals(_bitwise(written)):
        raise VerificationError(f"{path}: the file's values differ from the rows written")


def _bitwise(table: pa.Table) -> pa.Table:
    """Floating-point columns as integers of the same width: Arrow's equality says
    NaN != NaN; comparing bit patterns makes a NaN equal to itself (and -0.0 != 0.0)."""
    import pyarrow as pa

    widths = {pa.float16(): pa.int16(), pa.float32(): pa.int32(), pa.float64(): pa.int64()}
    columns = []
    for column in table.columns:
        target = widths.get(column.type)
        columns.append(column if target is None else pa.chunked_array(
            [chunk.view(target) for chunk in column.chunks], type=target))
    return pa.Table.from_arrays(columns, names=table.column_names)
