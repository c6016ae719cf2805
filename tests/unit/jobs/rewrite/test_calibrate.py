"""The actor's sample of what a table's rows take merged (no Spark): a real PyIceberg table
of small streamed files, its rows encoded as the Arrow engine writes them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icefloe.app.demo.orderlines import OrderLines
from icefloe.base.tablestats import current_partitions
from icefloe.jobs.rewrite.arrow_engine import ArrowTable, slim_metadata, write_parquet
from icefloe.jobs.rewrite.calibrate import encoded_size, sampled_rate

pytestmark = pytest.mark.unit

TARGET = 256 << 10


def streamed(tmp_path: Path, commits: int) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    stream = OrderLines(commits_per_day=1_000, seed=3)
    table = catalog.create_table(
        "db.lines",
        schema=stream.take().schema,
        properties={"write.parquet.compression-codec": "zstd"},
    )
    for _ in range(commits):
        table.append(stream.take())
    return catalog.load_table("db.lines")


def test_the_sample_predicts_what_a_target_sized_merge_writes(tmp_path: Path) -> None:
    table = streamed(tmp_path, 40)
    files = current_partitions(table)
    rate = sampled_rate(table, files, TARGET)
    assert rate is not None and rate.source == "sample"
    sizes = [s for pf in files for s in pf.sizes]
    records = [r for pf in files for r in pf.records]
    assert rate.value < 0.9 * sum(sizes) / sum(records)  # merged rows take fewer bytes
    rows = table.scan().to_arrow()
    arrow = ArrowTable(slim_metadata(table.metadata), dict(table.io.properties))
    at_target = rows.slice(0, int(TARGET / rate.value))  # a file of the target, by the rate
    written = encoded_size(arrow, at_target)
    assert 0.95 * TARGET <= written <= 1.05 * TARGET


def test_a_table_that_writes_avro_or_orc_is_not_sampled_as_parquet(tmp_path: Path) -> None:
    table = streamed(tmp_path, 40)
    with table.transaction() as tx:
        tx.set_properties({"write.format.default": "avro"})
    assert sampled_rate(table, current_partitions(table), TARGET) is None


def test_too_few_rows_tell_nothing(tmp_path: Path) -> None:
    table = streamed(tmp_path, 1)
    assert sampled_rate(table, current_partitions(table), TARGET) is None


def test_encoded_size_is_the_bytes_of_the_file_written(tmp_path: Path) -> None:
    table = streamed(tmp_path, 2)
    arrow = ArrowTable(slim_metadata(table.metadata), dict(table.io.properties))
    rows = table.scan().to_arrow()
    sink = io.BytesIO()
    written = write_parquet(arrow, sink, rows)
    assert encoded_size(arrow, rows) == len(sink.getvalue()) > 0
    assert pq.read_table(io.BytesIO(sink.getvalue())).num_rows == written.num_rows == len(rows)
