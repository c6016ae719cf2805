"""Z-order as a rewrite's row order, on real Spark + Iceberg, with each engine: a group of
overlapping files rewritten with ``zorder_columns`` keeps every row, writes each file in
ascending z-order key (no key column in it) and splits the key range between its files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icefloe.base.catalog import spark_table_name
from icefloe.base.tablestats import current_partitions
from icefloe.jobs.base.plan import FileGroup
from icefloe.jobs.rewrite.arrow_engine import ArrowTable, slim_metadata
from icefloe.jobs.rewrite.exact import ExactRewrite
from tests.support.zorder import assert_zordered

pytestmark = [pytest.mark.integration, pytest.mark.spark]

COLUMNS = ("a", "b")


def rows(spark: Any, name: str) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in spark.table(name).collect())


@pytest.mark.parametrize("engine", ["auto", "spark"])
def test_a_zorder_rewrite_keeps_every_row_in_zordered_files_apart(
    spark: Any, cfg: Any, catalog: Any, namespace: str, engine: str
) -> None:
    """Four files of 1,000 rows, each spanning the whole range of ``a`` and ``b`` (rows
    dealt round robin), into several files. ``auto``: the Arrow engine (a plain Parquet
    group); ``spark``: Spark's writer (no Arrow table given), its key from the Arrow UDF."""
    name = f"{namespace}.points"
    fq = spark_table_name(cfg, name)
    spark.sql(
        f"CREATE TABLE {fq} (a BIGINT, b STRING, c DOUBLE) USING iceberg "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(
        f"INSERT INTO {fq} SELECT /*+ REPARTITION(4) */ (id * 7919) % 1000 - 500, "
        "CASE WHEN id % 13 = 0 THEN NULL ELSE sha2(cast(id AS STRING), 256) END, id * 0.5 "
        "FROM range(4000)"
    )
    before = rows(spark, fq)
    table = catalog.load_table(name)
    (part,) = current_partitions(table)
    assert len(part.paths) == 4
    group = FileGroup(part.key, part.spec_id, tuple(part.paths), sum(part.sizes))
    arrow = ArrowTable(slim_metadata(table.metadata), dict(table.io.properties))
    rewrite = ExactRewrite(spark, fq, table.current_snapshot().snapshot_id)
    try:
        rewrite.load_tasks(part.paths)
        (result,) = rewrite.run(
            [group],
            max(1, group.bytes // 4),
            arrow=arrow if engine == "auto" else None,
            zorder_columns=COLUMNS,
        )
        assert result.engine == ("arrow" if engine == "auto" else "spark")
        files = [pq.read_table(Path(p.removeprefix("file:"))) for p in result.new_paths]
        assert len(files) >= 2
        assert all(f.column_names == ["a", "b", "c"] for f in files)
        assert sum(f.num_rows for f in files) == 4000
        assert_zordered(files, COLUMNS)
        rewrite.commit([result])
    finally:
        rewrite.close()
    assert rows(spark, fq) == before
