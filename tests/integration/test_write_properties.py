"""A table's write properties survive a rewrite (issue 28, item 7): a table whose
``write.parquet.*`` properties the Arrow engine cannot honour (here a bloom filter on a
column) has its groups written by Spark's writer, which keeps them; the report says why.
The same table without the property stays on the Arrow engine (whose files then have no
bloom filter: what the rule prevents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icefloe.jobs.data.optimize import optimize_table

pytestmark = [pytest.mark.spark, pytest.mark.integration]

BLOOM = "write.parquet.bloom-filter-enabled.column.k"
TARGET = 64 << 20  # Spark's bloom filters take up to 1 MiB a file: every file is small


def make_table(spark: Any, namespace: str, name: str, props: str) -> str:
    """Five small files in each of two days; a string column ``k`` for point lookups."""
    fq = f"lake.`{namespace}`.`{name}`"
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, k STRING) USING iceberg "
        f"PARTITIONED BY (day) TBLPROPERTIES ('format-version'='2', "
        f"'write.target-file-size-bytes'='{TARGET}'{props})"
    )
    for i in range(5):
        spark.sql(
            f"INSERT INTO {fq} SELECT id, concat('d', id % 2), sha2(cast(id AS STRING), 256) "
            f"FROM range({i * 200}, {(i + 1) * 200})"
        )
    return fq


def bloom_filters(path: str) -> list[bool]:
    """Per row group of the Parquet file at ``path``: does column ``k`` have a bloom
    filter (an offset to one in its column chunk's metadata)?"""
    meta = pq.ParquetFile(Path(path.removeprefix("file:"))).metadata
    found = []
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        (chunk,) = [
            group.column(j)
            for j in range(group.num_columns)
            if group.column(j).path_in_schema == "k"
        ]
        found.append(bool(chunk.bloom_filter_offset))
    return found


def live(spark: Any, fq: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.table(fq).collect())


def data_files(spark: Any, fq: str) -> set[str]:
    return {r.file_path for r in spark.sql(f"SELECT file_path FROM {fq}.files").collect()}


@pytest.mark.parametrize("bloom", [True, False])
def test_a_bloom_filter_property_sends_the_groups_to_spark_which_keeps_it(
    spark: Any, cfg: Any, namespace: str, bloom: bool
) -> None:
    props = f", '{BLOOM}'='true'" if bloom else ""
    fq = make_table(spark, namespace, "points", props)
    before, files_before = live(spark, fq), data_files(spark, fq)
    assert all(all(bloom_filters(p)) == bloom for p in files_before)  # Spark's INSERTs

    report = optimize_table(spark, cfg, f"{namespace}.points", min_input_files=2)

    assert report.partitions_rewritten == 2
    assert live(spark, fq) == before
    added = data_files(spark, fq) - files_before
    assert len(added) == report.files_added == 2
    for p in report.partitions:
        if bloom:
            assert p.engine == "spark"
            assert f"{BLOOM}=true" in p.reason and "does not honour" in p.reason
        else:
            assert p.engine == "arrow" and not p.reason
    for path in added:
        assert bloom_filters(path) and all(bloom_filters(path)) == bloom, path
