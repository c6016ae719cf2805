"""The Arrow engine's files carry the metrics of floating-point columns that Iceberg's
Parquet writer records and a footer does not hold (issue 45, item 10): NaN counts, and
bounds with NaN left out and ``-0.0`` below ``0.0`` (:mod:`icefloe.jobs.rewrite.float_metrics`).
Differential: the same rows compacted by each engine give files of equal metrics."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.jobs.data.optimize import optimize_table
from tests.support.config import with_engine

pytestmark = [pytest.mark.integration, pytest.mark.spark]

COLUMNS = (
    "id BIGINT, d DOUBLE, f FLOAT, s STRUCT<x: FLOAT, y: DOUBLE>, l ARRAY<DOUBLE>, "
    "r DOUBLE NOT NULL, z DOUBLE"
)
ROWS = """
SELECT /*+ REPARTITION(1) */ id,
  CASE id % 5 WHEN 0 THEN double('NaN') WHEN 1 THEN NULL WHEN 2 THEN double('-0.0')
    ELSE id * 0.5 END,
  CAST(CASE id % 4 WHEN 0 THEN double('NaN') WHEN 1 THEN NULL ELSE -id * 0.25 END AS FLOAT),
  CASE WHEN id % 6 = 0 THEN NULL ELSE named_struct(
    'x', CAST(CASE WHEN id % 3 = 0 THEN double('-0.0') ELSE id END AS FLOAT),
    'y', CASE WHEN id % 2 = 0 THEN NULL ELSE double('0.0') END) END,
  array(double('Infinity'), id * 1.0),
  CASE WHEN id % 7 = 0 THEN double('-Infinity') ELSE id * 2.0 END,
  CASE WHEN id % 2 = 0 THEN double('NaN') END
FROM range({start}, {stop})
"""
METRICS = "value_counts, null_value_counts, nan_value_counts, lower_bounds, upper_bounds"


def make_table(spark: Any, namespace: str, name: str) -> str:
    """Three small files of floating-point columns with NaNs, nulls, zeros of both signs
    and infinities; floats in a struct (null in some rows) and in a list, ``r``, never
    NaN, and ``z``, only NaN or null (no bounds). The nested ones hold no NaN: the Arrow
    engine's read-back compares only top-level floats by bit pattern, so a nested NaN
    sends the group to Spark's writer."""
    fq = f"lake.`{namespace}`.`{name}`"
    spark.sql(f"CREATE TABLE {fq} ({COLUMNS}) USING iceberg TBLPROPERTIES ('format-version'='2')")
    for i in range(3):
        spark.sql(f"INSERT INTO {fq} " + ROWS.format(start=i * 40, stop=(i + 1) * 40))
    return f"{namespace}.{name}"


def metrics(spark: Any, ident: str) -> list[dict[str, Any]]:
    ns, name = ident.split(".")
    rows = spark.sql(f"SELECT {METRICS} FROM lake.`{ns}`.`{name}`.files").collect()
    return [r.asDict() for r in rows]


def test_arrow_files_carry_the_nan_counts_and_bounds_icebergs_writer_records(spark, cfg, namespace):
    arrow_table = make_table(spark, namespace, "by_arrow")
    spark_table = make_table(spark, namespace, "by_spark")
    written = metrics(spark, spark_table)  # as Iceberg's writer recorded them at insert
    assert all(m["nan_value_counts"] for m in written)
    by_arrow = optimize_table(spark, with_engine(cfg, "auto"), arrow_table, action="merge")
    by_spark = optimize_table(spark, with_engine(cfg, "spark"), spark_table, action="merge")
    assert [p.engine for p in by_arrow.partitions] == ["arrow"]
    assert [p.engine for p in by_spark.partitions] == ["spark"]
    (arrow,), (iceberg,) = metrics(spark, arrow_table), metrics(spark, spark_table)
    # d, f, z; s.x, s.y and r never NaN: a count of 0; none for the list's elements
    assert iceberg["nan_value_counts"] == {2: 24, 3: 30, 8: 0, 9: 0, 6: 0, 7: 60}
    assert 7 not in iceberg["lower_bounds"] and 7 not in iceberg["upper_bounds"]
    assert arrow["nan_value_counts"] == iceberg["nan_value_counts"]
    assert arrow == iceberg
