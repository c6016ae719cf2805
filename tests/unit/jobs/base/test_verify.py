"""Verification: the checksum equals a plain exact sum; the GE suite, run on the measures of
the written data, fails on a bad one and names what failed."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.jobs.base.verify import (
    KEY,
    Checksum,
    checksum_exprs,
    checksum_of,
    checksums_by_key,
    prepare,
    profile,
    row_hash,
    run_suite,
)


@pytest.mark.spark
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


@pytest.mark.unit
def test_suite_passes_good_measures_and_names_each_failed_expectation() -> None:
    good = Checksum(2, 0, {"id": 2, "s": 2})
    ok = run_suite(good, 2, ["id", "s"])
    assert ok.success and ok.expectations == 2 and ok.failed == [] and ok.rows_checked == 2
    bad = Checksum(2, 0, {"id": 2, "s": 1})  # a row short, and a null in s
    result = run_suite(bad, 3, ["id", "s"])
    assert not result.success
    assert result.failed == ["row count 2, expected 3", "nulls in column s"]
    # a column allowed to hold nulls is not checked
    assert run_suite(bad, 2, ["id"]).success
    # one more row than the input had fails too
    assert run_suite(Checksum(3, 0, {"id": 3}), 2, ["id"]).failed == ["row count 3, expected 2"]


@pytest.mark.unit
def test_a_null_free_column_missing_from_the_written_data_fails() -> None:
    result = run_suite(Checksum(2, 0, {"id": 2}), 2, ["id", "gone"])
    assert not result.success and result.failed == ["nulls in column gone"]


@pytest.mark.unit
def test_suite_takes_awkward_column_names() -> None:
    """Column names are data of the suite's frame, never code or SQL: backticks, braces,
    spaces and the frame's own column names are ordinary names."""
    names = ["a`b", "{batch}", "c d", "rows", "nulls", "null_free", "column"]
    good = Checksum(1, 0, dict.fromkeys(names, 1))
    assert run_suite(good, 1, names).success
    bad = Checksum(2, 0, {**dict.fromkeys(names, 2), "a`b": 1, "{batch}": 1, "null_free": 0})
    assert run_suite(bad, 2, names).failed == [
        "nulls in column a`b",
        "nulls in column null_free",
        "nulls in column {batch}",
    ]


@pytest.mark.spark
def test_the_one_pass_sees_a_null_that_parquet_statistics_might_hide(
    spark: Any, tmp_path: Any
) -> None:
    """The suite's measures come from the checksum's own aggregation over every row (no
    pushed-down filter): a null in one row group of many fails the suite."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    values: list[str | None] = [f"v{i}" for i in range(10_000)]
    values[7_777] = None
    pq.write_table(
        pa.table({"id": list(range(10_000)), "s": values}),
        tmp_path / "f.parquet",
        row_group_size=1_000,
    )
    assert pq.ParquetFile(tmp_path / "f.parquet").num_row_groups == 10
    df = spark.read.parquet(str(tmp_path / "f.parquet"))
    columns = ["id", "s"]
    measured = checksum_of(df.agg(*checksum_exprs(df, columns)).first(), columns)
    assert measured.rows == 10_000 and measured.non_null == {"id": 10_000, "s": 9_999}
    result = run_suite(measured, 10_000, columns)
    assert not result.success and result.failed == ["nulls in column s"]
    rest = df.filter("id != 7777")
    assert run_suite(
        checksum_of(rest.agg(*checksum_exprs(rest, columns)).first(), columns), 9_999, columns
    ).success


@pytest.mark.unit
def test_one_suite_per_process_shared_by_every_thread() -> None:
    """The GE context and suite are built once per process (not per action, not per
    thread) and run from any thread; repeated runs leave the suite as it was."""
    from concurrent.futures import ThreadPoolExecutor

    first = prepare().result()
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(
            pool.map(lambda n: run_suite(Checksum(n, 0, {"id": n}), n, ["id"]).success, range(1, 9))
        )
    assert runs == [True] * 8
    assert not run_suite(Checksum(5, 0, {"id": 4}), 5, ["id"]).success
    assert prepare().result() is first
    assert len(first.suite.expectations) == 2


@pytest.mark.unit
def test_profile_is_one_row_per_column() -> None:
    frame = profile(Checksum(4, 0, {"id": 4, "s": 3}), ["id"])
    assert frame.to_dict("records") == [
        {"column": "id", "rows": 4, "nulls": 0, "null_free": True},
        {"column": "s", "rows": 4, "nulls": 1, "null_free": False},
    ]
