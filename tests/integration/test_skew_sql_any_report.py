"""Whatever the hot-key report says, the skew rule's answer is the plain one.

A report only chooses which keys are salted and how many ways: hypothesis writes reports
that are right, wrong (keys the table does not hold, counts far off, a NULL pile that is
not there) or partly right, and picks the join type, which side the reported table is on,
a filter on it and the number of shuffle partitions (which sets the salts); the result with
the rule must equal the result without it, row for row.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.base.catalog import spark_table_name
from icefloe.base.config import Config
from icefloe.optimizer.skew_report import build, encode, property_name

pytestmark = [pytest.mark.spark, pytest.mark.integration]

ENABLED = "spark.icefloe.skew.enabled"
AGGREGATES = "spark.icefloe.skew.aggregates"
JOINS = ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "LEFT SEMI JOIN", "LEFT ANTI JOIN"]
FILTERS = ["", "WHERE id % 4 = 0", "WHERE k IS NULL OR k > 2", "WHERE k = 1"]


@pytest.fixture(scope="module")
def pair(spark: Any, cfg: Config, catalog: Any) -> Any:
    catalog.create_namespace_if_not_exists("skew_any")
    fact, dim = (spark_table_name(cfg, f"skew_any.{t}") for t in ("f", "d"))
    spark.sql(
        f"CREATE TABLE {fact} USING iceberg AS SELECT id, CASE WHEN id % 10 < 4 THEN 1L "
        "WHEN id % 10 < 6 THEN 2L WHEN id % 10 = 6 THEN NULL ELSE id % 40 END AS k "
        "FROM range(2000)"
    )
    spark.sql(
        f"CREATE TABLE {dim} USING iceberg AS SELECT CAST(id AS BIGINT) AS k, id AS n "
        "FROM range(30) WHERE id != 2 UNION ALL SELECT 1L, 100L UNION ALL SELECT NULL, 101L"
    )
    snap = spark.sql(f"SELECT snapshot_id FROM {fact}.snapshots").collect()[0][0]
    confs = ("spark.sql.shuffle.partitions", "spark.sql.autoBroadcastJoinThreshold")
    before = {k: spark.conf.get(k) for k in confs}
    before[ENABLED] = spark.conf.get(ENABLED, "true")  # the rule's switch: on unless set
    before[AGGREGATES] = spark.conf.get(AGGREGATES, "false")
    spark.conf.set(AGGREGATES, "true")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    yield fact, dim, snap
    for k, v in before.items():
        spark.conf.set(k, v)
    spark.sql(f"DROP TABLE {fact}")
    spark.sql(f"DROP TABLE {dim}")


def _rows(spark: Any, query: str, on: bool) -> list[str]:
    spark.conf.set(ENABLED, "true" if on else "false")
    return sorted(repr(tuple(r)) for r in spark.sql(query).collect())


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    keys=st.dictionaries(
        st.sampled_from([1, 2, 3, 7, 39, 555]), st.integers(1, 2000), min_size=1, max_size=4
    ),
    null_rows=st.sampled_from([0, 400, 1500]),
    join=st.sampled_from(JOINS),
    fact_left=st.booleans(),
    where=st.sampled_from(FILTERS),
    partitions=st.sampled_from([2, 8, 32]),
)
def test_any_report_gives_the_plain_answer(
    spark: Any,
    pair: Any,
    keys: dict[int, int],
    null_rows: int,
    join: str,
    fact_left: bool,
    where: str,
    partitions: int,
) -> None:
    fact, dim, snap = pair
    report = build(
        "k", "bigint", snap, int(time.time() * 1000), 3_600_000, 2000, null_rows, keys.items()
    )
    spark.sql(f"ALTER TABLE {fact} SET TBLPROPERTIES ('{property_name('k')}' = '{encode(report)}')")
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    f = f"(SELECT * FROM {fact} {where})"
    left, right = (f, dim) if fact_left else (dim, f)
    query = f"SELECT * FROM {left} x {join} {right} y ON x.k = y.k"
    assert _rows(spark, query, True) == _rows(spark, query, False)
    grouped = f"SELECT k, count(*), sum(id), min(id), max(id) FROM {f} GROUP BY k"
    assert _rows(spark, grouped, True) == _rows(spark, grouped, False)
