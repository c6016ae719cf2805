"""#47: the declared write order honoured to the letter by both engines. A table ordered
``s DESC NULLS FIRST, f ASC NULLS LAST, bucket(4, i)`` with edge values (unicode strings,
NULLs, NaN, ±inf, decimals, dates, timestamps) is re-sorted by ``optimize --action sort``;
each new file's rows are compared with Spark's own ``ORDER BY`` of that file's rows, and
every new file carries the table's ``sort_order_id``."""

from __future__ import annotations

import math
from typing import Any

import pytest

from icefloe.jobs.data.optimize import optimize_table
from tests.integration.test_actors import ecfg, engine_of, fq

pytestmark = [pytest.mark.integration, pytest.mark.spark]

__all__ = ["ecfg"]  # the engine-parametrized config fixture, shared with test_actors

ORDER = "s DESC NULLS FIRST, f ASC NULLS LAST, lake.system.bucket(4, i) ASC NULLS FIRST"
STRINGS = ["NULL", "''", "'a'", "'é'", "'z'", "'\U0001f600'", "'Ab'"]
FLOATS = [
    "NULL",
    "double('NaN')",
    "double('-Infinity')",
    "-0.5",
    "0.0",
    "2.5",
    "double('Infinity')",
]


def _values(k: int) -> str:
    """One commit's rows: every combination of a few strings and floats, other columns
    varied with ``k``."""
    rows = []
    for a, s in enumerate(STRINGS):
        for b, f in enumerate(FLOATS):
            n = k * 100 + a * 10 + b
            i = "NULL" if n % 11 == 0 else str(n * 7919 % 1000)
            rows.append(
                f"({s}, {f}, {i}, CAST({n % 97 - 40}.25 AS DECIMAL(10,2)), "
                f"DATE'2026-01-01' + {n % 31}, TIMESTAMP'2026-01-01 00:00:00' + "
                f"make_interval(0, 0, 0, 0, {n % 24}, 0, 0))"
            )
    return ", ".join(rows)


def _key(row: Any) -> tuple[Any, ...]:
    f = row["f"]
    return (row["s"], "NaN" if f is not None and math.isnan(f) else f, row["b"])


def test_new_files_follow_the_declared_order_to_the_letter(
    spark: Any, ecfg: Any, namespace: str
) -> None:
    ident = f"{namespace}.ordered"
    spark.sql(
        f"CREATE TABLE {fq(ident)} (s STRING, f DOUBLE, i BIGINT, m DECIMAL(10,2), d DATE, "
        "ts TIMESTAMP) USING iceberg TBLPROPERTIES ('format-version'='2')"
    )
    for k in range(3):  # before the order is declared: unsorted files, sort_order_id 0
        spark.sql(f"INSERT INTO {fq(ident)} VALUES {_values(k)}")
    spark.sql(f"ALTER TABLE {fq(ident)} WRITE ORDERED BY {ORDER.replace('lake.system.', '')}")
    before = sorted(repr(tuple(r)) for r in spark.table(fq(ident)).collect())  # NaN: by text
    old = {r[0] for r in spark.sql(f"SELECT file_path FROM {fq(ident)}.files").collect()}

    report = optimize_table(spark, ecfg, ident, action="sort")
    assert report.files_rewritten >= 2
    assert {p.engine for p in report.partitions if p.status == "rewritten"} == {engine_of(ecfg)}
    after = sorted(repr(tuple(r)) for r in spark.table(fq(ident)).collect())
    assert after == before  # every row kept

    files = [
        r
        for r in spark.sql(f"SELECT file_path, sort_order_id FROM {fq(ident)}.files").collect()
        if r["file_path"] not in old
    ]
    assert files and {r["sort_order_id"] for r in files} == {1}  # the declared order's id
    for r in files:
        path = r["file_path"]
        query = f"SELECT s, f, lake.system.bucket(4, i) AS b FROM parquet.`{path}`"
        as_written = [_key(x) for x in spark.sql(query).collect()]
        by_spark = [_key(x) for x in spark.sql(f"{query} ORDER BY {ORDER}").collect()]
        assert as_written == by_spark, path
