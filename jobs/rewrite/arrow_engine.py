"""The Arrow engine: rewrite a file group inside a Spark task with pyarrow, proved exact.

Spark's Iceberg writer decodes every row into the JVM and encodes it again; for a plain
merge of Parquet files that is most of an actor's time (against a raw pyarrow
read + write of the same files it ran at 0.04-0.10x). This engine does the data movement
with Arrow instead (on a cluster in the Python tasks of one Spark job, the groups dealt
to as many tasks as there are cores; under a local master in the driver's threads, the
same cores without a Python worker round trip per task), and leaves the commit to the
same Java ``RewriteFiles`` path as the Spark engine (:mod:`icefloe.jobs.rewrite.commit`):

1. read the group's files in the table's current schema: a file that holds exactly
   its columns (names, field ids, types) as it is, any other through PyIceberg's
   ``ArrowScan`` (field-id projection, so renamed, added and promoted columns read as
   Iceberg reads them); optionally order the rows (in the sort order, as Spark's writer
   does: :mod:`icefloe.jobs.rewrite.sort_rows`; or by z-order key:
   :mod:`icefloe.jobs.rewrite.zorder_rows`);
2. split the rows into output files by the bytes they are predicted to write, each later
   file's share taken from the bytes per row the group's files so far really took
   (:class:`icefloe.optimizer.output_model.OutputSplit`; z-ordered rows into the predicted
   number of files, at the curve's cell edges nearby: ``zordered_files``) and write each
   with pyarrow's Parquet writer and PyIceberg's options for it (the table's codec, level,
   page settings; row groups by :func:`.write_properties.row_group_rows`; Iceberg field
   ids; dictionaries where Iceberg's writer keeps them, :mod:`.dictionaries`);
3. **verify every file before it counts**: read it back and compare it value by value
   with the rows that were written (floating point compared by bit pattern, so a NaN
   equals itself), and check that the rows read equal the inputs' record counts. This is
   stronger than the Spark engine's order-independent checksum: equal tables imply
   equal checksums, and a row dropped, duplicated or altered anywhere fails.

Only groups this engine can do exactly are sent to it (:func:`eligible`): Parquet files
whose delete files are all Parquet position deletes (:mod:`.arrow_deletes`), no more than
``MAX_IN_MEMORY_BYTES`` to hold at once, of a table without row lineage whose write
properties it all honours (:mod:`.write_properties`). Anything else, and any group whose
Arrow task fails for any reason, goes through the Spark engine (the caller's job); files
a failed task wrote are deleted by the caller, which knows them all.

This module runs in Spark's Python workers: no SparkSession, no py4j, no ``icefloe.base``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from icefloe.jobs.rewrite.arrow_deletes import DeleteIndex, drop_positions
from icefloe.jobs.rewrite.dictionaries import dictionary_columns
from icefloe.jobs.rewrite.file_bytes import (
    Footer,
    VerificationError,
    parquet_of,
    plain_readable,
    whole,
)
from icefloe.jobs.rewrite.write_properties import ROW_GROUP_BYTES, row_group_rows
from icefloe.optimizer.output_model import OutputSplit

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.io import FileIO
    from pyiceberg.table.metadata import TableMetadata

    from icefloe.optimizer.sortorder import SortField


@dataclass(frozen=True)
class ArrowTable:
    """What every task of one rewrite needs to know of the table."""

    metadata: TableMetadata  # slimmed: no snapshot history
    io_properties: dict[str, str]

    @cached_property
    def written_schema(self) -> pa.Schema:
        """The current schema as PyIceberg writes it into a data file (field ids on every
        field, nested ones included; 32-bit string, binary and list offsets, as a Parquet
        reader returns them): what every file we write holds."""
        # pyiceberg: only when a catalog, table or file is used
        import pyarrow as pa
        from pyiceberg.io.pyarrow import (
            ParquetFormatModel,
            _pyarrow_schema_ensure_small_types,
            _to_requested_schema,
            schema_to_pyarrow,
        )

        schema = self.metadata.schema()
        small = _pyarrow_schema_ensure_small_types(schema_to_pyarrow(schema))
        empty = pa.RecordBatch.from_pylist([], schema=small)
        return _to_requested_schema(
            requested_schema=schema,
            file_schema=schema,
            batch=empty,
            include_field_ids=True,
            format_model=ParquetFormatModel(),
        ).schema

    @cached_property
    def writer_options(self) -> dict[str, Any]:
        """``pq.ParquetWriter`` options from the table's properties, as PyIceberg's writer
        takes them (codec, level, page and dictionary sizes, page row limit); row groups
        are sized here (PyIceberg would warn that it does not)."""
        # pyiceberg: only when a catalog, table or file is used
        from pyiceberg.io.pyarrow import _get_parquet_writer_kwargs

        props = {k: v for k, v in self.metadata.properties.items() if k != ROW_GROUP_BYTES}
        return {
            **_get_parquet_writer_kwargs(props),
            "store_decimal_as_integer": True,
        }


@dataclass(frozen=True)
class ArrowGroup:
    """One file group: its inputs, and the paths of the files it may write."""

    group_id: str
    spec_id: int
    inputs: tuple[tuple[str, int], ...]  # (path, record count)
    outputs: tuple[str, ...]  # one per planned output file, in order
    sort_order: tuple[SortField, ...] = ()  # icefloe.optimizer.sortorder
    deletes: tuple[tuple[str, ...], ...] = ()  # per input: its position delete files
    zorder_columns: tuple[str, ...] = ()  # when given: z-order, not the sort columns
    predicted_bytes: int = 0  # what the group is predicted to write (0: not known)
    target: int = 0  # the table's target file size (0: rows spread over every output)


@dataclass
class ArrowResult:
    group_id: str
    rows_in: int = 0
    non_null: dict[str, int] = field(default_factory=dict)  # of the rows read
    files: list[tuple[str, int]] = field(default_factory=list)  # (path, rows), verified
    non_null_out: dict[str, int] = field(default_factory=dict)  # of the files read back
    # each file's size and Parquet footer, as read back: its DataFile's metrics, with no
    # further request (icefloe.jobs.rewrite.new_files)
    footers: dict[str, Footer] = field(default_factory=dict)


def slim_metadata(metadata: TableMetadata) -> TableMetadata:
    """The table's metadata without its history, for shipping to tasks."""
    return metadata.model_copy(
        update={
            "snapshots": [],
            "snapshot_log": [],
            "metadata_log": [],
            "refs": {},
            "current_snapshot_id": None,
            "statistics": [],
            "partition_statistics": [],
        }
    )


MAX_IN_MEMORY_BYTES = 512 << 20
"""Parquet bytes a task may hold decoded at once: one output file when merging, the whole
group when sorting (Arrow sorts in memory; Spark's sort spills, so bigger sorts go there)."""


def eligible(
    file_format: str, paths: Sequence[str], has_deletes: bool, in_memory_bytes: int = 0
) -> bool:
    """Can the Arrow engine do this group exactly, within its memory bound? ``has_deletes``:
    a delete file it cannot apply (not a Parquet position delete) applies to it."""
    return (
        file_format == "parquet"
        and not has_deletes
        and all(p.lower().endswith(".parquet") for p in paths)
        and in_memory_bytes <= MAX_IN_MEMORY_BYTES
    )


def rewrite_groups(table: ArrowTable, groups: Sequence[ArrowGroup]) -> list[ArrowResult]:
    """One Spark task's share of the groups, one after another."""
    return [rewrite_group(table, g) for g in groups]


def rewrite_group(table: ArrowTable, group: ArrowGroup) -> ArrowResult:
    """Read, (sort or z-order), write and verify one group. Raises on any mismatch."""
    from pyiceberg.io import load_file_io  # pyiceberg: only when a catalog, table or file is used

    from icefloe.jobs.rewrite import sort_rows, zorder_rows  # pyarrow: files read

    io = load_file_io(table.io_properties, table.metadata.location)
    index, deleted = DeleteIndex(io), {}
    for i, (path, rows) in enumerate(group.inputs):
        deletes = group.deletes[i] if i < len(group.deletes) else ()
        deleted[path] = index.positions(path, deletes, rows) if deletes else ()
    total_rows = sum(n for _, n in group.inputs)
    expected_rows = total_rows - sum(len(p) for p in deleted.values())
    result = ArrowResult(group.group_id)
    live = _read(table, io, group, deleted)
    predicted = group.predicted_bytes * expected_rows // max(1, total_rows)  # live rows' share
    split = OutputSplit(expected_rows, predicted, group.target, len(group.outputs))
    if group.zorder_columns:
        chunks = zorder_rows.zordered_files(live, group.zorder_columns, split.files)
    else:
        if group.sort_order:
            live = sort_rows.sorted_batches(live, group.sort_order)
        chunks = _chunks(live, split.next_rows)
    for i, chunk in enumerate(chunks):
        result.rows_in += chunk.num_rows
        if i >= len(group.outputs):  # more rows than the inputs' metadata says
            continue
        for name, column in zip(chunk.column_names, chunk.columns, strict=True):
            result.non_null[name] = result.non_null.get(name, 0) + len(column) - column.null_count
        path = group.outputs[i]
        written = _write(table, io, path, chunk)
        counts, result.footers[path] = _verify(io, path, written)
        split.wrote(written.num_rows, result.footers[path].size)
        for name, n in counts.items():
            result.non_null_out[name] = result.non_null_out.get(name, 0) + n
        result.files.append((path, written.num_rows))
    if result.rows_in != expected_rows:
        raise VerificationError(
            f"group {group.group_id}: read {result.rows_in} rows, the input files' "
            f"metadata and position deletes say {expected_rows}"
        )
    if not result.files:
        result.non_null = {f.name: 0 for f in table.metadata.schema().fields}
        result.non_null_out = dict(result.non_null)
    return result


def _read(table: ArrowTable, io: FileIO, group: ArrowGroup, deleted: Any) -> Iterator[Any]:
    """The group's live rows (without deleted positions), file by file as read."""
    for path, rows in group.inputs:
        file = read_data_file(table, io, group.spec_id, path, rows)
        yield from drop_positions(file, deleted[path])


def read_data_file(
    table: ArrowTable, io: FileIO, spec_id: int, path: str, rows: int
) -> list[pa.RecordBatch]:
    """One data file's rows as Iceberg reads them. A file that holds exactly the table's
    current columns as Iceberg writes them (names, field ids, types and nullability, in
    order) is read as it is: a field-id projection of it is the identity. That is nearly
    every file of a table whose schema never changed, at half the cost of PyIceberg's
    ``ArrowScan``, which re-derives the projection for every file. Any other file (renamed,
    added or promoted columns, no field ids, a map column) goes through ``ArrowScan``. A
    table whose schema never changed has its files read whole; others the footer first
    (``ArrowScan`` reads an older file again itself)."""
    import pyarrow.parquet as pq  # pyarrow: only when files are read or written

    if len(table.metadata.schemas) == 1:
        plain = _plain_rows(parquet_of(whole(io, path)), table)
    else:
        with io.new_input(path).open() as f:
            plain = _plain_rows(pq.ParquetFile(f), table)
    return plain if plain is not None else list(_scan(table, io, spec_id, path, rows))


def _plain_rows(parquet: pq.ParquetFile, table: ArrowTable) -> list[pa.RecordBatch] | None:
    """The file's rows in the table's written schema when it holds exactly those columns
    (:func:`icefloe.jobs.rewrite.file_bytes.plain_readable`), else None."""
    if not plain_readable(parquet.schema_arrow, table.written_schema):
        return None
    batches: list[pa.RecordBatch] = parquet.read().cast(table.written_schema).to_batches()
    return batches


def _scan(
    table: ArrowTable, io: FileIO, spec_id: int, path: str, rows: int
) -> Iterator[pa.RecordBatch]:
    """One file through PyIceberg's ``ArrowScan``: field-id projection onto the current
    schema (renames, added columns and type promotions as Iceberg reads them)."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.table import FileScanTask
    from pyiceberg.typedef import Record

    data_file = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=rows,
        file_size_in_bytes=0,
    )
    data_file.spec_id = spec_id
    schema = table.metadata.schema()
    yield from ArrowScan(table.metadata, io, schema, AlwaysTrue()).to_record_batches(
        [FileScanTask(data_file)]
    )


def _chunks(batches: Iterator[pa.RecordBatch], size: Callable[[], int]) -> Iterator[pa.Table]:
    """Tables of exactly ``size()`` rows (asked again before each table: the caller's
    writes in between can change it; the last table: the rest) from a stream of batches."""
    import pyarrow as pa  # pyarrow: only when files are read or written

    pending: list[pa.RecordBatch] = []
    rows, want = 0, size()
    for batch in batches:
        if pending and not batch.schema.equals(pending[0].schema, check_metadata=True):
            # e.g. string vs large_string, or one file read as it is and one by ArrowScan
            batch = batch.cast(pending[0].schema)
        pending.append(batch)
        rows += batch.num_rows
        while rows >= want:
            whole = pa.Table.from_batches(pending)
            yield whole.slice(0, want)
            rest = whole.slice(want)
            pending, rows = rest.to_batches(), rest.num_rows
            want = size()
    if rows:
        yield pa.Table.from_batches(pending)


def _write(table: ArrowTable, io: FileIO, path: str, chunk: pa.Table) -> pa.Table:
    """Write ``chunk`` as one Parquet data file (PyIceberg's writer options, Iceberg field
    ids); returns exactly what was written."""
    with io.new_output(path).create(overwrite=True) as out:
        return write_parquet(table, out, chunk)


def write_parquet(table: ArrowTable, out: Any, chunk: pa.Table) -> pa.Table:
    """``chunk`` as one Parquet file into the stream ``out``, as :func:`_write` writes a
    data file; returns exactly what was written."""
    import pyarrow.parquet as pq  # pyarrow: only when files are read or written

    arrow = _as_written(table, chunk)
    options = table.writer_options | {"use_dictionary": dictionary_columns(arrow)}
    with pq.ParquetWriter(out, schema=arrow.schema, **options) as writer:
        rows = row_group_rows(table.metadata.properties, arrow.num_rows, arrow.nbytes)
        writer.write(arrow, row_group_size=rows)
    return arrow


def _as_written(table: ArrowTable, chunk: pa.Table) -> pa.Table:
    """``chunk`` in the table's schema as Iceberg writes it (field ids on every field).
    Rows read as they are, or through ``ArrowScan`` with the same types, need nothing
    or only their field ids; anything else goes through PyIceberg's projection, batch by
    batch."""
    # pyiceberg: only when a catalog, table or file is used
    import pyarrow as pa
    from pyiceberg.io.pyarrow import ParquetFormatModel, _to_requested_schema

    written = table.written_schema
    if chunk.schema.equals(written, check_metadata=True):
        return chunk
    if chunk.schema.equals(written, check_metadata=False):
        return chunk.cast(written)  # the same types: only the field ids are added
    schema = table.metadata.schema()
    model = ParquetFormatModel()
    return pa.Table.from_batches(
        [
            _to_requested_schema(
                requested_schema=schema,
                file_schema=schema,
                batch=b,
                downcast_ns_timestamp_to_us=False,
                include_field_ids=True,
                format_model=model,
            )
            for b in chunk.to_batches()
        ]
    )


def _verify(io: FileIO, path: str, written: pa.Table) -> tuple[dict[str, int], Footer]:
    """The file at ``path`` holds exactly ``written``, row for row, value for value; its
    non-null count per column, as read back (the data checks' measure of the output), and
    its footer as read back."""
    data = whole(io, path)
    footer = Footer.of(data, path, written)
    back = parquet_of(data).read()
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
    counts = {name: back.num_rows - back.column(name).null_count for name in back.column_names}
    return counts, footer


def _bitwise(table: pa.Table) -> pa.Table:
    """Floating-point columns as integers of the same width: Arrow's equality says
    NaN != NaN; comparing bit patterns makes a NaN equal to itself (and -0.0 != 0.0)."""
    import pyarrow as pa  # pyarrow: only when files are read or written

    widths = {pa.float16(): pa.int16(), pa.float32(): pa.int32(), pa.float64(): pa.int64()}
    columns = []
    for column in table.columns:
        target = widths.get(column.type)
        columns.append(
            column
            if target is None
            else pa.chunked_array([chunk.view(target) for chunk in column.chunks], type=target)
        )
    return pa.Table.from_arrays(columns, names=table.column_names)
