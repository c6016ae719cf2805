"""The output model's rate measured on a table that has never been rewritten.

Until a table's first rewrite, nothing in its metadata says what its rows take merged
(:mod:`icefloe.optimizer.output_model`): the slope of size on rows over its small files is the
best guess, and on streamed order lines it was 24% over what the merge wrote, so every
output landed under 0.75·T and was merged again at once. Before its first plan, an actor
measures instead: the rows of the small files it is about to merge, up to about one
target's worth of input (and at most :data:`SAMPLE_BYTES_MAX`), encoded in memory exactly
as the Arrow engine writes a file (:func:`icefloe.jobs.rewrite.arrow_engine.write_parquet`), half
of them and all of them; the two sizes give the rate of a file of the target size
(:func:`icefloe.optimizer.output_model.extrapolated_rate`). Nothing is written to storage. After
the first rewrite the table's snapshot summaries say it, and no sample is taken.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from icefloe.jobs.rewrite.arrow_engine import (
    ArrowTable,
    read_data_file,
    slim_metadata,
    write_parquet,
)
from icefloe.optimizer import is_small
from icefloe.optimizer.output_model import BytesPerRow, extrapolated_rate

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from icefloe.base.tablestats import PartitionFiles

log = logging.getLogger(__name__)

SAMPLE_BYTES_MAX = 64 << 20
"""Input bytes a sample reads at most, whatever the target (512 MiB targets included)."""

MIN_SAMPLE_ROWS = 2_000
"""Fewer rows than this tell too little: the metadata's estimate is kept."""


def encoded_size(table: ArrowTable, rows: Any) -> int:
    """Bytes of ``rows`` written as one data file of ``table`` (in memory)."""
    import pyarrow as pa  # pyarrow: only when files are read or written

    sink = pa.BufferOutputStream()
    write_parquet(table, sink, rows)
    return int(sink.tell())


def sampled_rate(table: Table, files: Sequence[PartitionFiles], target: int) -> BytesPerRow | None:
    """What a merged row of ``table`` takes, measured on its small files in ``files`` (the
    partitions about to be planned; module doc), or None when they hold too few rows, a
    file cannot be read (the rewrite itself then reports what is wrong) or the table
    writes another format than Parquet."""
    import pyarrow as pa  # pyarrow: only when files are read or written

    if table.properties.get("write.format.default", "parquet").lower() != "parquet":
        return None  # the sample is encoded as Parquet: it tells nothing of Avro or ORC files
    budget = min(SAMPLE_BYTES_MAX, target + target // 2)
    arrow = ArrowTable(slim_metadata(table.metadata), dict(table.io.properties))
    batches: list[pa.RecordBatch] = []
    taken = 0
    try:
        for pf in files:
            for path, size, rows in zip(pf.paths, pf.sizes, pf.records, strict=True):
                if taken >= budget or not is_small(size, target):
                    continue
                batches += read_data_file(arrow, table.io, pf.spec_id, path, rows)
                taken += size
        if sum(b.num_rows for b in batches) < MIN_SAMPLE_ROWS:
            return None
        first = batches[0].schema  # one schema: a file read by ArrowScan may differ in types
        rows = pa.Table.from_batches(
            [b if b.schema.equals(first) else b.cast(first) for b in batches]
        )
        half = rows.slice(0, rows.num_rows // 2)
        measured = extrapolated_rate(
            (half.num_rows, encoded_size(arrow, half)),
            (rows.num_rows, encoded_size(arrow, rows)),
            target,
        )
    except Exception as e:  # an unreadable file, a schema the sample cannot join: the
        # rewrite reads the same files and says what is wrong, in its one error line
        log.debug("no output-size sample of %s: %s", ".".join(table.name()), e)
        return None
    return BytesPerRow(measured, "sample")
