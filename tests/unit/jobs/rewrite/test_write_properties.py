"""Which table write properties keep a rewrite off the Arrow engine (issue 28, item 7):
every ``write.*`` property that changes the data file Spark's writer would write and that
the Arrow engine does not apply sends the table's groups to Spark, with the reason."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from icefloe.jobs.rewrite.arrow_driver import ArrowDriver
from icefloe.jobs.rewrite.write_properties import (
    HONOURED,
    row_group_rows,
    spark_only_reason,
    unhonoured,
)

pytestmark = pytest.mark.unit

SPARK_DEFAULTS = {"write.parquet.compression-codec": "zstd", "owner": "root"}


@pytest.mark.parametrize(
    "props",
    [
        {},
        SPARK_DEFAULTS,
        {
            "write.parquet.compression-codec": "snappy",
            "write.parquet.compression-level": "3",
            "write.parquet.page-size-bytes": "65536",
            "write.parquet.page-row-limit": "1000",
            "write.parquet.dict-size-bytes": "1048576",
            "write.parquet.row-group-limit": "50000",
            "write.parquet.row-group-size-bytes": "8388608",
            "write.parquet.row-group-size-track-uncompressed": "false",
            "write.parquet.row-group-check-max-record-count": "100",
            "write.target-file-size-bytes": "1000",
            "write.format.default": "parquet",
        },
        {  # metrics: Iceberg's own, from each file's footer, with the table's MetricsConfig
            "write.metadata.metrics.default": "full",
            "write.metadata.metrics.column.k": "none",
            "write.metadata.metrics.max-inferred-column-defaults": "5",
        },
        {  # where files go: the table's own location provider
            "write.data.path": "s3://b/elsewhere",
            "write.object-storage.enabled": "true",
            "write.object-storage.partitioned-paths": "false",
            "write.location-provider.impl": "com.example.Provider",
        },
        {  # nothing of a data file's bytes
            "write.delete.mode": "merge-on-read",
            "write.update.mode": "merge-on-read",
            "write.merge.isolation-level": "snapshot",
            "write.delete.parquet.compression-codec": "gzip",
            "write.distribution-mode": "hash",
            "write.metadata.compression-codec": "gzip",
            "write.metadata.previous-versions-max": "5",
            "write.manifest.compression-codec": "gzip",
            "write.summary.partition-limit": "10",
            "write.spark.fanout.enabled": "true",
            "write.wap.enabled": "true",
            "write.orc.bloom.filter.columns": "k",
            "write.avro.compression-codec": "gzip",
            "read.split.target-size": "1",
            "commit.retry.num-retries": "9",
        },
        {  # per-column flags at the value pyarrow writes anyway
            "write.parquet.bloom-filter-enabled.column.k": "false",
            "write.parquet.stats-enabled.column.k": "true",
            "write.parquet.dict-encoding-enabled.column.k": "TRUE",
        },
        {  # bloom filter tuning while no column has a bloom filter
            "write.parquet.bloom-filter-max-bytes": "4096",
            "write.parquet.bloom-filter-fpp.column.k": "0.01",
            "write.parquet.bloom-filter-enabled.column.k": "false",
        },
    ],
)
def test_what_the_arrow_engine_honours_keeps_it(props: dict[str, str]) -> None:
    assert unhonoured(props) == []
    assert spark_only_reason(props, 2) == ""


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("write.parquet.bloom-filter-enabled.column.k", "true"),
        ("write.parquet.page-version", "v2"),
        ("write.parquet.stats-enabled.column.k", "false"),
        ("write.parquet.dict-encoding-enabled.column.k", "false"),
        ("write.parquet.bloom-filter-enabled.column.k", "TRUE"),
        ("write.parquet.shred-variants", "true"),
        ("write.parquet.some-future-option", "x"),  # unknown: not promised
        ("write.some-future-option", "x"),
    ],
)
def test_a_property_the_arrow_engine_does_not_honour_sends_the_table_to_spark(
    key: str, value: str
) -> None:
    props = {**SPARK_DEFAULTS, key: value}
    assert unhonoured(props) == [f"{key}={value}"]
    reason = spark_only_reason(props, 2)
    assert reason == f"the Arrow engine does not honour the table's {key}={value}"


def test_bloom_filter_tuning_counts_once_a_column_has_one() -> None:
    props = {
        "write.parquet.bloom-filter-enabled.column.k": "true",
        "write.parquet.bloom-filter-fpp.column.k": "0.01",
        "write.parquet.bloom-filter-max-bytes": "4096",
    }
    assert unhonoured(props) == [
        "write.parquet.bloom-filter-enabled.column.k=true",
        "write.parquet.bloom-filter-fpp.column.k=0.01",
        "write.parquet.bloom-filter-max-bytes=4096",
    ]


def test_the_reason_names_three_properties_and_counts_the_rest() -> None:
    props = {f"write.parquet.bloom-filter-enabled.column.c{i}": "true" for i in range(5)}
    reason = spark_only_reason(props, 2)
    assert reason.endswith("column.c2=true and 2 more"), reason


def test_row_lineage_sends_a_format_version_3_table_to_spark() -> None:
    assert "row lineage" in spark_only_reason(SPARK_DEFAULTS, 3)
    assert "format version 3" in spark_only_reason({}, 3)
    assert spark_only_reason(SPARK_DEFAULTS, 1) == ""


def test_every_writer_option_pyiceberg_applies_is_listed_as_honoured() -> None:
    """The Arrow engine writes with PyIceberg's ``_get_parquet_writer_kwargs``: each
    property it reads (and the row-group limit, read beside it) is honoured."""
    from pyiceberg.table import TableProperties as P

    read = {
        P.PARQUET_COMPRESSION,
        P.PARQUET_COMPRESSION_LEVEL,
        P.PARQUET_PAGE_SIZE_BYTES,
        P.PARQUET_PAGE_ROW_LIMIT,
        P.PARQUET_DICT_SIZE_BYTES,
        P.PARQUET_ROW_GROUP_LIMIT,
    }
    assert read <= HONOURED
    # what PyIceberg warns it does not implement: row-group bytes (done here), bloom filters
    assert P.PARQUET_ROW_GROUP_SIZE_BYTES in HONOURED
    assert unhonoured({f"{P.PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX}.k": "true"})


def test_row_groups_hold_the_row_limit_and_the_byte_size_at_most() -> None:
    assert row_group_rows({}, 3_000_000, 30_000_000) == 1 << 20  # PyIceberg's row limit
    assert row_group_rows({}, 1000, 1 << 30) == 125  # 128 MiB of 1 MiB rows
    props = {"write.parquet.row-group-size-bytes": "1000", "write.parquet.row-group-limit": "7"}
    assert row_group_rows(props, 100, 10_000) == 7  # 10 rows of 1000 bytes, limit 7
    assert row_group_rows(props, 100, 1_000_000) == 1  # never less than one row
    assert row_group_rows({"write.parquet.row-group-size-bytes": "1000"}, 100, 10_000) == 10
    bad = {"write.parquet.row-group-size-bytes": "x", "write.parquet.row-group-limit": "0"}
    assert row_group_rows(bad, 0, 0) == 1 << 20  # defaults for unusable values


def test_the_arrow_engine_writes_row_groups_of_the_tables_byte_size(tmp_path: Any) -> None:
    """A table with ``write.parquet.row-group-size-bytes``: the Arrow engine's file has
    row groups of at most about that many (uncompressed) bytes, every row kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.catalog.sql import SqlCatalog

    from icefloe.jobs.rewrite import arrow_engine as ar

    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    rows = pa.table({"id": pa.array(range(4000), pa.int64())})  # 8 bytes a row
    props = {"write.parquet.row-group-size-bytes": "8000"}  # 1000 rows
    table = catalog.create_table("db.t", schema=rows.schema, properties=props)
    table.append(rows)
    files = [t.file for t in table.scan().plan_files()]
    group = ar.ArrowGroup(
        "g",
        0,
        tuple((f.file_path, f.record_count) for f in files),
        (f"file://{tmp_path}/o.parquet",),
    )
    done = ar.rewrite_group(ar.ArrowTable(ar.slim_metadata(table.metadata), {}), group)
    meta = pq.ParquetFile(f"{tmp_path}/o.parquet").metadata
    assert done.files[0][1] == 4000
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(groups) == 4000 and len(groups) in (4, 5)  # 8 bytes a row, and its validity
    assert all(900 < n <= 1000 for n in groups[:4]), groups


def test_the_driver_asks_with_the_tables_properties_and_format_version() -> None:
    driver: Any = ArrowDriver.__new__(ArrowDriver)
    bloom = {"write.parquet.bloom-filter-enabled.column.k": "true"}
    v2 = SimpleNamespace(metadata=SimpleNamespace(properties=bloom, format_version=2))
    assert "bloom-filter-enabled.column.k=true" in driver.refusal(v2)
    plain = SimpleNamespace(metadata=SimpleNamespace(properties=SPARK_DEFAULTS, format_version=2))
    assert driver.refusal(plain) == ""
    v3 = SimpleNamespace(metadata=SimpleNamespace(properties=SPARK_DEFAULTS, format_version=3))
    assert "row lineage" in driver.refusal(v3)
