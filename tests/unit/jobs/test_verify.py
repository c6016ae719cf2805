"""Verification: the checksum equals a plain exact sum; the GE suite names what failed."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.verify import KEY, checksums_by_key, row_hash, run_suite

pytestmark = [pytest.mark.spark]


def test_split_sum_equals_the_decimal_sum_of_the_hashes(spark: Any) -> None:
    from pyspark.sql import functions as F

    df = spark.range(5000).selectExpr(
        "id",
        "cast(id * 7919 as string) s",
        "if(id % 11 = 0, null, id / 3.0) d",
        "cast(id % 3 as string) as " + KEY,
    )
    columns = ["id", "s", "d"]
    got = checksums_by_key(df, columns)
    expected = {
        r[KEY]: (int(r["n"]), int(r["total"]), int(r["nn"]))
        for r in df.groupBy(KEY)
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(row_hash(df.select(*columns)).cast("decimal(38,0)")).alias("total"),
            F.count("d").alias("nn"),
        )
        .collect()
    }
    assert set(got) == set(expected) == {"0", "1", "2"}
    for key, (n, total, nn) in expected.items():
        assert (got[key].rows, got[key].checksum, got[key].non_null["d"]) == (n, total, nn)
    # and it sees a lost row: drop one, the checksum moves
    fewer = checksums_by_key(df.filter("id != 42"), columns)
    assert fewer["0"].checksum != got["0"].checksum


def test_suite_passes_good_data_and_names_each_failed_expectation(spark: Any) -> None:
    good = spark.createDataFrame([(1, "a"), (2, "b")], "id long, s string")
    ok = run_suite(good, 2, ["id", "s"])
    assert ok.success and ok.expectations == 2 and ok.failed == []
    bad = spark.createDataFrame([(1, None), (2, "x")], "id long, s string")
    result = run_suite(bad, 3, ["id", "s"])
    assert not result.success
    assert result.failed == ["expect_table_row_count_to_equal(value=3)", "nulls in column s"]
    # a column allowed to hold nulls is not checked
    assert run_suite(bad, 2, ["id"]).success


def test_suite_quotes_awkward_column_names(spark: Any) -> None:
    """Column names go into GE's SQL: backticks and braces must neither break the query
    nor be read as GE's ``{batch}`` placeholder."""
    names = ["a`b", "{batch}", "c d"]
    schema = ", ".join(f"`{n.replace('`', '``')}` string" for n in names)
    good = spark.createDataFrame([("1", "2", "3")], schema)
    assert run_suite(good, 1, names).success
    bad = spark.createDataFrame([("1", None, "3"), (None, "2", "3")], schema)
    assert run_suite(bad, 2, names).failed == ["nulls in column a`b", "nulls in column {batch}"]


def test_suite_finds_a_null_that_parquet_statistics_must_not_hide(
    spark: Any, tmp_path: Any
) -> None:
    """The null check is pushed down to the Parquet reader, which skips row groups whose
    statistics say they hold no nulls: a null in one row group of many must still fail."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = [f"v{i}" for i in range(10_000)]
    values[7_777] = None
    pq.write_table(
        pa.table({"id": list(range(10_000)), "s": values}),
        tmp_path / "f.parquet",
        row_group_size=1_000,
    )
    assert pq.ParquetFile(tmp_path / "f.parquet").num_row_groups == 10
    df = spark.read.parquet(str(tmp_path / "f.parquet"))
    result = run_suite(df, 10_000, ["id", "s"])
    assert not result.success and result.failed == ["nulls in column s"]
    assert run_suite(df.filter("id != 7777"), 9_999, ["id", "s"]).success


def test_suite_leaves_nothing_cached(spark: Any) -> None:
    """GE persists a Spark batch by default and never unpersists it: run after run, an
    actor would keep every action's written data in executor memory."""
    before = spark.sparkContext._jsc.getPersistentRDDs().size()
    df = spark.range(1000).selectExpr("id", "cast(id AS STRING) AS s")
    assert run_suite(df, 1000, ["id", "s"]).success
    assert not df.is_cached
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == before
