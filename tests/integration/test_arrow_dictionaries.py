"""The Arrow engine encodes each column as Iceberg's own writer does (issue 29): a merged
file keeps a dictionary only for the columns parquet-mr keeps one for, so it comes out
about as large as the same rows compacted by Iceberg's ``rewrite_data_files`` — before,
dictionaries on nearly unique columns made it 15-20% larger, and every later merge
rewrote those extra bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icefloe.jobs.data.optimize import optimize_table

pytestmark = [pytest.mark.spark, pytest.mark.integration]

COLUMNS = ("id", "k", "c", "n", "v")


def make_table(spark: Any, namespace: str, name: str) -> str:
    """Five Spark-written files in one day: unique ids, hashes and doubles, and two
    low-cardinality columns."""
    fq = f"lake.`{namespace}`.`{name}`"
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, k STRING, c STRING, n INT, v DOUBLE) "
        "USING iceberg PARTITIONED BY (day) TBLPROPERTIES ('format-version'='2', "
        "'write.parquet.compression-codec'='zstd')"
    )
    for i in range(5):
        spark.sql(
            f"INSERT INTO {fq} SELECT id, 'd1', sha2(cast(id AS STRING), 256), "
            "concat('c', id % 7), cast(id % 100 AS INT), hash(id) / 1000.0 "
            f"FROM range({i * 3000}, {(i + 1) * 3000})"
        )
    return fq


def data_files(spark: Any, fq: str) -> set[str]:
    return {r.file_path for r in spark.sql(f"SELECT file_path FROM {fq}.files").collect()}


def dictionary_encoded(path: str) -> dict[str, bool]:
    """Per column of the file's first row group: does its chunk use a dictionary?"""
    group = pq.ParquetFile(Path(path.removeprefix("file:"))).metadata.row_group(0)
    chunks = (group.column(j) for j in range(group.num_columns))
    return {
        c.path_in_schema: any("DICTIONARY" in e for e in c.encodings)
        for c in chunks
        if c.path_in_schema in COLUMNS
    }


def test_a_merge_encodes_columns_as_icebergs_compaction(
    spark: Any, cfg: Any, namespace: str
) -> None:
    ours, theirs = make_table(spark, namespace, "enc_a"), make_table(spark, namespace, "enc_b")
    before_ours, before_theirs = data_files(spark, ours), data_files(spark, theirs)

    report = optimize_table(spark, cfg, f"{namespace}.enc_a", min_input_files=2)
    spark.sql(
        f"CALL lake.system.rewrite_data_files(table => '{namespace}.enc_b', "
        "options => map('min-input-files', '2'))"
    ).collect()

    assert [p.engine for p in report.partitions] == ["arrow"]
    (mine,) = data_files(spark, ours) - before_ours
    (iceberg,) = data_files(spark, theirs) - before_theirs
    expected = dictionary_encoded(iceberg)
    assert expected == {"id": False, "k": False, "c": True, "n": True, "v": False}
    assert dictionary_encoded(mine) == expected
    size = {p: Path(p.removeprefix("file:")).stat().st_size for p in (mine, iceberg)}
    assert size[mine] < 1.1 * size[iceberg], size
    assert sorted(spark.table(ours).collect()) == sorted(spark.table(theirs).collect())
