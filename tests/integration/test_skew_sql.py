"""The skew-aware SQL extension (jvm/, ``dev.icefloe.spark.SkewRule``) gives the plain
plan's answer, row for row (differential tests), and says so in ``EXPLAIN``.

Iceberg tables with planted hot keys: several hot keys, NULL keys, a hot key missing on the
other side, duplicates on both sides; a hot-key report in the fact table's properties, as
``icefloe skew detect`` writes it. Every query runs with the rule and with
``spark.icefloe.skew.enabled=false`` in the one session of the run; the full contents must
be equal (values are halves and integers, so sums and averages are exact in any order).
With no report, an outdated one, one of another column or type, or the switch off, the
optimized plan is the plain one. Every join test runs in both of the rule's forms: isolated
(the other side under ``spark.icefloe.skew.isolateMaxBytes``: a UNION ALL of the cold join
and a broadcast join of the hot keys' rows) and salted (that switch at -1).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from icefloe.base.catalog import spark_table_name
from icefloe.base.config import Config
from icefloe.optimizer.skew_report import HotKeyReport, encode, property_name

pytestmark = [pytest.mark.spark, pytest.mark.integration]

ENABLED = "spark.icefloe.skew.enabled"
AGGREGATES = "spark.icefloe.skew.aggregates"
ISOLATE = "spark.icefloe.skew.isolateMaxBytes"
PROBE_FILES = "spark.icefloe.skew.probeFiles"
MIN_SHARE = "spark.icefloe.skew.isolateMinShare"
LABEL = {"isolate": "icefloe_isolate(", "salt": "icefloe_salt("}
FACT_ROWS = 6000
# key -> share of the fact's rows: 1 and 2 are hot, 3 is hot and missing from the dimension
HOT = {1: 0.30, 2: 0.15, 3: 0.10}
NULL_SHARE = 0.10


@contextmanager
def probe_files(spark: Any, files: int) -> Iterator[None]:
    """How many data files per hot key the rule may read on the driver to prove a key held
    (``DriverProbe``); 0: every presence question is asked of the rows (subqueries)."""
    before = spark.conf.get(PROBE_FILES, "2")
    spark.conf.set(PROBE_FILES, str(files))
    try:
        yield
    finally:
        spark.conf.set(PROBE_FILES, before)


@contextmanager
def rule(spark: Any, on: bool) -> Iterator[None]:
    before = spark.conf.get(ENABLED, "true")
    spark.conf.set(ENABLED, "true" if on else "false")
    try:
        yield
    finally:
        spark.conf.set(ENABLED, before)


def _fact_sql(name: str) -> str:
    cases = []
    low = 0
    for key, share in HOT.items():
        high = low + int(share * 100)
        cases.append(f"WHEN id % 100 < {high} THEN {key}L")
        low = high
    cases.append(f"WHEN id % 100 < {low + int(NULL_SHARE * 100)} THEN NULL")
    return (
        f"CREATE TABLE {name} USING iceberg AS SELECT id, "
        f"CASE {' '.join(cases)} ELSE id % 97 + 10 END AS k, "
        "CAST(id AS DOUBLE) / 2 AS v, "
        "CASE WHEN id % 100 < 30 THEN 'hot' WHEN id % 100 < 40 THEN NULL "
        "ELSE concat('s', id % 50) END AS sk "
        f"FROM range({FACT_ROWS})"
    )


def _dim_sql(name: str) -> str:
    # keys 0..119 but 3; key 1 twice (duplicates on both sides); NULL keys; 'hot' twice
    return (
        f"CREATE TABLE {name} USING iceberg AS "
        "SELECT CAST(id AS BIGINT) AS k, concat('n', id) AS name, "
        "CASE WHEN id < 2 THEN 'hot' ELSE concat('s', id) END AS sk "
        "FROM range(120) WHERE id != 3 "
        "UNION ALL SELECT 1L, 'dup', 's7' UNION ALL SELECT NULL, 'nullkey', NULL "
        "UNION ALL SELECT NULL, 'nullkey2', 'hot'"
    )


def _report(spark: Any, table: str, column: str, **overrides: Any) -> HotKeyReport:
    """The report ``skew detect`` would store: counted here exactly from the table."""
    rows = spark.sql(f"SELECT {column} AS c, count(*) AS n FROM {table} GROUP BY {column}")
    counts = {r["c"]: r["n"] for r in rows.collect()}
    total = sum(counts.values())
    hot = sorted(
        ((str(k), n) for k, n in counts.items() if k is not None and n >= 0.05 * total),
        key=lambda kv: -kv[1],
    )
    snap = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at")
    dtype = spark.table(table).schema[column].dataType.simpleString()
    fields: dict[str, Any] = {
        "column": column,
        "type": dtype,
        "snapshot_id": snap.collect()[-1][0],
        "computed_at_ms": int(time.time() * 1000),
        "max_age_ms": 3_600_000,
        "rows": total,
        "null_rows": counts.get(None, 0),
        "keys": tuple(hot),
    }
    fields.update(overrides)
    return HotKeyReport(**fields)


def _store(spark: Any, table: str, report: HotKeyReport) -> None:
    key, value = property_name(report.column), encode(report)
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{key}' = '{value}')")


@pytest.fixture(scope="module")
def tables(spark: Any, cfg: Config, catalog: Any) -> dict[str, str]:
    ns = "skew_sql"
    catalog.create_namespace_if_not_exists(ns)
    names = {t: spark_table_name(cfg, f"{ns}.{t}") for t in ("f", "d", "plain")}
    spark.sql(_fact_sql(names["f"]))
    spark.sql(_dim_sql(names["d"]))
    spark.sql(_fact_sql(names["plain"]))  # the same data, no report
    _store(spark, names["f"], _report(spark, names["f"], "k"))
    _store(spark, names["f"], _report(spark, names["f"], "sk"))
    # a few shuffle partitions of 6,000 rows: key 1 fills several of them; no broadcast of
    # the small dimension (the rule leaves a join Spark broadcasts alone: it has no skew)
    confs = {"spark.sql.shuffle.partitions": "8", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    before = {k: spark.conf.get(k) for k in confs}
    before[AGGREGATES] = spark.conf.get(AGGREGATES, "false")
    confs[AGGREGATES] = "true"  # off by default: partial aggregation already spreads a hot key
    for k, v in confs.items():
        spark.conf.set(k, v)
    yield names
    for k, v in before.items():
        spark.conf.set(k, v)
    for name in names.values():
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@contextmanager
def settings(spark: Any, **confs: str) -> Iterator[None]:
    """Spark settings for the block, each set back (or unset) after it."""
    before = {k: spark.conf.get(k, None) for k in confs}
    for k, v in confs.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


@pytest.fixture(scope="module", params=sorted(LABEL))
def form(request: Any, spark: Any, tables: dict[str, str]) -> Iterator[str]:
    """The rule's form for joins: isolate (the hot share never too small) or salt (the
    share always too small: a shuffled hash join building the small side)."""
    share = "0" if request.param == "isolate" else "2"
    with settings(spark, **{ISOLATE: "256m", MIN_SHARE: share}):
        yield request.param


def _rows(df: Any) -> list[str]:
    return sorted(repr(tuple(r)) for r in df.collect())


def _optimized(spark: Any, query: str) -> str:
    plan = spark.sql(f"EXPLAIN EXTENDED {query}").collect()[0][0]
    return plan.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]


def _same_answer(spark: Any, query: str) -> str:
    """Asserts the rule's answer is the plain one; returns the rule's optimized plan."""
    with rule(spark, True):
        salted = _rows(spark.sql(query))
        plan = _optimized(spark, query)
    with rule(spark, False):
        plain = _rows(spark.sql(query))
    assert salted == plain, query
    assert salted, f"no rows: the query tests nothing ({query})"
    return plan


JOINS = {
    "inner": "JOIN",
    "left": "LEFT JOIN",
    "right": "RIGHT JOIN",
    "full": "FULL JOIN",
}


@pytest.mark.parametrize("files", [2, 0], ids=["driver-probe", "rows-asked"])
@pytest.mark.parametrize("fact_left", [True, False], ids=["fact-left", "fact-right"])
@pytest.mark.parametrize("how", sorted(JOINS))
def test_outer_and_inner_joins_equal_the_plain_join(
    spark: Any, tables: dict[str, str], form: str, how: str, fact_left: bool, files: int
) -> None:
    f, d = tables["f"], tables["d"]
    a, b = (f, d) if fact_left else (d, f)
    query = f"SELECT x.k AS xk, y.k AS yk, x.*, y.* FROM {a} x {JOINS[how]} {b} y ON x.k = y.k"
    with probe_files(spark, files):
        plan = _same_answer(spark, query)
    # salted: the keys that fill two partitions or more; isolated: every reported key
    keys = {"salt": 2, "isolate": 3}[form]
    assert f"{LABEL[form]}{f.replace('`', '')}.k: {keys} hot keys" in plan.replace("`", "")


def test_salted_sort_merge_joins_equal_the_plain_join(spark: Any, tables: dict[str, str]) -> None:
    """The salted form where the other side is too big to hash (isolation off): Spark's
    sort-merge join over the salted key."""
    f, d = tables["f"], tables["d"]
    with settings(spark, **{ISOLATE: "-1"}):
        for a, b in ((f, d), (d, f)):
            for how in JOINS.values():
                query = f"SELECT x.k AS xk, y.k AS yk, x.*, y.* FROM {a} x {how} {b} y ON x.k = y.k"
                assert "icefloe_salt(" in _same_answer(spark, query)
                assert "ShuffledHashJoin" not in spark.sql(query)._jdf.queryExecution().toString()


def test_the_form_follows_the_hot_rows_share(spark: Any, tables: dict[str, str]) -> None:
    """Isolating reads the reported side twice to keep its hot rows out of the shuffle: the
    rule isolates only where they are at least ``isolateMinShare`` of its rows (0.6), else
    salts, building the small side in a shuffled hash join. Here the hot keys hold 55% of
    the rows, the NULL keys 10% more (spared by isolating where the join keeps them)."""
    f, d = tables["f"], tables["d"]
    inner = f"SELECT * FROM {f} x JOIN {d} y ON x.k = y.k"
    left = f"SELECT * FROM {f} x LEFT JOIN {d} y ON x.k = y.k"
    with settings(spark, **{ISOLATE: "256m", MIN_SHARE: "0.6"}):
        spark.conf.unset(MIN_SHARE)  # the default; set back on the way out
        plan = spark.sql(inner)._jdf.queryExecution().toString()
        assert "icefloe_salt(" in plan and "ShuffledHashJoin" in plan
        assert "icefloe_isolate(" in _optimized(spark, left)  # 65%
        with settings(spark, **{MIN_SHARE: "0.7"}):
            assert "icefloe_salt(" in _optimized(spark, left)
        with settings(spark, **{MIN_SHARE: "0.5"}):
            assert "icefloe_isolate(" in _optimized(spark, inner)


@pytest.mark.parametrize("how", ["LEFT SEMI", "LEFT ANTI"])
def test_semi_and_anti_joins_equal_the_plain_join(
    spark: Any, tables: dict[str, str], form: str, how: str
) -> None:
    f, d = tables["f"], tables["d"]
    plan = _same_answer(spark, f"SELECT * FROM {f} x {how} JOIN {d} y ON x.k = y.k")
    assert LABEL[form] in plan
    # the fact on the right of a semi/anti join is never output: nothing to salt, same rows
    plan = _same_answer(spark, f"SELECT * FROM {d} x {how} JOIN {f} y ON x.k = y.k")
    assert "icefloe_" not in plan


@pytest.mark.parametrize("how", sorted(JOINS))
def test_string_keys_and_filtered_sides(
    spark: Any, tables: dict[str, str], form: str, how: str
) -> None:
    """A string key with a NULL pile; the salted side filtered, so a hot key may be gone
    from it (the copied side's rows of that key must then come out once, unmatched)."""
    f, d = tables["f"], tables["d"]
    query = (
        f"SELECT x.id, x.sk, y.name FROM (SELECT * FROM {f} WHERE id % 3 = 0 OR sk IS NULL) x "
        f"{JOINS[how]} {d} y ON x.sk = y.sk"
    )
    plan = _same_answer(spark, query)
    assert f"{LABEL[form]}" in plan and ".sk: 1 hot keys" in plan
    gone = f"SELECT * FROM (SELECT * FROM {f} WHERE k != 1) x {JOINS[how]} {d} y ON x.k = y.k"
    assert LABEL[form] in _same_answer(spark, gone)


def test_conditions_beyond_the_key(spark: Any, tables: dict[str, str], form: str) -> None:
    """More than the one equality: rewritten where every pair still meets in one part (the
    reported side keeps its unmatched rows); left alone where the other side keeps them."""
    f, d = tables["f"], tables["d"]
    extra = "x.k = y.k AND x.id % 5 < length(y.name)"
    label = LABEL[form]
    assert label in _same_answer(spark, f"SELECT * FROM {f} x JOIN {d} y ON {extra}")
    assert label in _same_answer(spark, f"SELECT * FROM {f} x LEFT JOIN {d} y ON {extra}")
    plan = _same_answer(spark, f"SELECT * FROM {f} x FULL JOIN {d} y ON {extra}")
    assert "icefloe_" not in plan
    both = f"SELECT * FROM {f} x JOIN {d} y ON x.k = y.k AND x.sk = y.sk"
    assert label in _same_answer(spark, both)


def test_group_by_equals_the_plain_aggregation(spark: Any, tables: dict[str, str]) -> None:
    f = tables["f"]
    query = (
        f"SELECT k, count(*) AS n, count(v) AS nv, sum(id) AS s, min(v) AS lo, "
        "max(sk) AS hi, sum(id) FILTER (WHERE id % 2 = 0) AS se, "
        f"sum(id) FILTER (WHERE id < 0) AS none, max(id) - min(id) AS spread FROM {f} GROUP BY k"
    )
    assert "icefloe_salt(" in _same_answer(spark, query)
    two = f"SELECT k, id % 3 AS m, sum(id) AS s FROM {f} GROUP BY k, id % 3"
    _same_answer(spark, two)  # grouped by an expression: left alone or salted, same rows
    by_sk = f"SELECT sk, count(*), max(v) FROM {f} GROUP BY sk"
    assert "icefloe_salt(" in _same_answer(spark, by_sk)
    spark.conf.set(AGGREGATES, "false")  # the default
    try:
        _unchanged(spark, query)
    finally:
        spark.conf.set(AGGREGATES, "true")


def test_aggregates_that_do_not_split_are_left_alone(spark: Any, tables: dict[str, str]) -> None:
    f = tables["f"]
    for agg in (
        "count(DISTINCT v)",
        "collect_set(id % 3)",
        "avg(CAST(v AS DECIMAL(12, 2)))",
        "stddev(v)",
        # issue #61: an overflowed partial is NULL, and combined it would be dropped
        "try_sum(id)",
        "try_avg(v)",
        "sum(CAST(v AS DECIMAL(38, 0)))",
        # a double sum rounds by the order of its terms: partials per salt change a digit
        "avg(id)",
        "sum(v)",
    ):
        query = f"SELECT k, {agg} AS x FROM {f} GROUP BY k"
        with rule(spark, True):
            plan = _optimized(spark, query)
        assert "icefloe_salt" not in plan, agg
        if "collect_set" not in agg:  # a set's order is not defined
            _same_answer(spark, query)


def _normalized(plan: str) -> str:
    return re.sub(r"#\d+L?|plan_id=\d+", "#", plan)


def _unchanged(spark: Any, query: str) -> None:
    with rule(spark, True):
        on = _optimized(spark, query)
    with rule(spark, False):
        off = _optimized(spark, query)
    assert "icefloe_" not in on
    assert _normalized(on) == _normalized(off)


def test_plan_unchanged_without_a_current_report(
    spark: Any, tables: dict[str, str], form: str
) -> None:
    f, d, plain = tables["f"], tables["d"], tables["plain"]
    _unchanged(spark, f"SELECT * FROM {plain} x FULL JOIN {d} y ON x.k = y.k")  # no report
    _unchanged(spark, f"SELECT * FROM {f} x JOIN {d} y ON x.id = y.k")  # another column
    with rule(spark, False):  # the switch
        assert "icefloe_" not in _optimized(
            spark, f"SELECT * FROM {f} x FULL JOIN {d} y ON x.k = y.k"
        )
    # outdated: another snapshot, older than its max age; then another type
    old = _report(
        spark, plain, "k", snapshot_id=1, computed_at_ms=int(time.time() * 1000) - 7200_000
    )
    _store(spark, plain, old)
    _unchanged(spark, f"SELECT * FROM {plain} x LEFT JOIN {d} y ON x.k = y.k")
    _unchanged(spark, f"SELECT k, sum(id) FROM {plain} GROUP BY k")
    _store(spark, plain, _report(spark, plain, "k", type="int"))
    _unchanged(spark, f"SELECT * FROM {plain} x LEFT JOIN {d} y ON x.k = y.k")
    # the same report at the table's current snapshot is used however old it is
    current = _report(spark, plain, "k", computed_at_ms=int(time.time() * 1000) - 7200_000)
    _store(spark, plain, current)
    assert LABEL[form] in _same_answer(
        spark, f"SELECT * FROM {plain} x LEFT JOIN {d} y ON x.k = y.k"
    )
    spark.sql(f"ALTER TABLE {plain} UNSET TBLPROPERTIES ('{property_name('k')}')")


@pytest.mark.parametrize("files", [2, 0], ids=["driver-probe", "rows-asked"])
def test_a_report_never_stands_for_the_rows(
    spark: Any, tables: dict[str, str], form: str, files: int
) -> None:
    """Where the other side keeps its unmatched rows, which hot keys the reported side holds
    is found in the table's data files on the driver (``DriverProbe``) or asked of the side's
    rows (the presence subqueries), never taken from the report: a report at the table's own
    snapshot that names a key the table does not hold (a table property anyone can write)
    still gives the plain answer."""
    f, d = tables["f"], tables["d"]
    with probe_files(spark, files):
        plan = _same_answer(spark, f"SELECT * FROM {d} x LEFT JOIN {f} y ON x.k = y.k")
        assert LABEL[form] in plan
        # every hot key is in the fact table's files: none is left to ask of the rows
        assert ("icefloe_present" in plan) == (files == 0)
        lying = f.replace(".`f`", ".`lying`")
        spark.sql(
            f"CREATE TABLE {lying} USING iceberg AS SELECT * FROM {f} WHERE k IS NULL OR k != 2"
        )
        try:
            snap = spark.sql(f"SELECT snapshot_id FROM {lying}.snapshots").collect()[0][0]
            _store(spark, lying, _report(spark, f, "k", snapshot_id=snap))  # key 2: not there
            for how in ("LEFT JOIN", "FULL JOIN"):
                plan = _same_answer(spark, f"SELECT * FROM {d} x {how} {lying} y ON x.k = y.k")
                assert LABEL[form] in plan and "icefloe_present" in plan
            right = f"SELECT * FROM {lying} x RIGHT JOIN {d} y ON x.k = y.k"
            assert LABEL[form] in _same_answer(spark, right)
        finally:
            spark.sql(f"DROP TABLE {lying}")


def test_the_driver_probe_reads_only_live_rows(
    spark: Any, tables: dict[str, str], form: str
) -> None:
    """A file a delete file applies to proves nothing (its row of the key may be deleted):
    key 2's rows deleted merge-on-read stay in the data files, so the probe must not find
    it there. A time-travel read is probed at its own snapshot: key 2 is in the first one
    only."""
    f, d = tables["f"], tables["d"]
    mor = f.replace(".`f`", ".`mor`")
    spark.sql(
        f"CREATE TABLE {mor} USING iceberg TBLPROPERTIES ('format-version' = '2', "
        f"'write.delete.mode' = 'merge-on-read') AS SELECT * FROM {f}"
    )
    try:
        first = spark.sql(f"SELECT snapshot_id FROM {mor}.snapshots").collect()[0][0]
        spark.sql(f"DELETE FROM {mor} WHERE k = 2")
        assert spark.sql(f"SELECT count(*) FROM {mor}.delete_files").collect()[0][0] > 0
        _store(spark, mor, _report(spark, f, "k", computed_at_ms=int(time.time() * 1000)))
        for how in ("LEFT JOIN", "FULL JOIN"):
            plan = _same_answer(spark, f"SELECT * FROM {d} x {how} {mor} y ON x.k = y.k")
            assert LABEL[form] in plan and "icefloe_present" in plan  # asked of the rows
            old = f"SELECT * FROM {d} x {how} {mor} VERSION AS OF {first} y ON x.k = y.k"
            plan = _same_answer(spark, old)
            assert LABEL[form] in plan and "icefloe_present" not in plan  # found in files
    finally:
        spark.sql(f"DROP TABLE {mor}")


def test_the_driver_probe_reads_the_column_the_query_reads(
    spark: Any, tables: dict[str, str], form: str
) -> None:
    """A schema change makes no snapshot: after ``k`` is renamed and a new, empty ``k``
    added, the current snapshot's own schema still calls the old column ``k``. The query
    reads the new one, so the probe must not prove the old column's keys."""
    f, d = tables["f"], tables["d"]
    moved = f.replace(".`f`", ".`moved`")
    spark.sql(f"CREATE TABLE {moved} USING iceberg AS SELECT * FROM {f}")
    try:
        spark.sql(f"ALTER TABLE {moved} RENAME COLUMN k TO k_old")
        spark.sql(f"ALTER TABLE {moved} ADD COLUMN k BIGINT")
        _store(spark, moved, _report(spark, f, "k"))  # keys 1, 2, 3: none in the new k
        for how in ("LEFT JOIN", "FULL JOIN"):
            plan = _same_answer(spark, f"SELECT * FROM {d} x {how} {moved} y ON x.k = y.k")
            assert LABEL[form] in plan and "icefloe_present" in plan
    finally:
        spark.sql(f"DROP TABLE {moved}")


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        (PROBE_FILES, "two"),
        ("spark.icefloe.skew.maxSalts", "many"),
        (ISOLATE, "big"),
        (MIN_SHARE, "most"),
        (MIN_SHARE, "-1"),
    ],
)
def test_a_bad_setting_fails_the_query_naming_it(
    spark: Any, tables: dict[str, str], key: str, bad: str
) -> None:
    f, d = tables["f"], tables["d"]
    before = spark.conf.get(key, None)
    spark.conf.set(key, bad)
    try:
        with pytest.raises(Exception, match=re.escape(f"{key} must be")):
            spark.sql(f"SELECT * FROM {d} x LEFT JOIN {f} y ON x.k = y.k").collect()
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def test_rewrites_are_counted_and_dataframes_fire_too(spark: Any, tables: dict[str, str]) -> None:
    f, d = tables["f"], tables["d"]
    rule_class = spark._jvm.dev.icefloe.spark.SkewRule
    before = rule_class.rewrites()
    joined = spark.table(d).join(spark.table(f), on="k", how="left")
    with rule(spark, True):
        salted = _rows(joined)
    assert rule_class.rewrites() > before
    with rule(spark, False):
        assert salted == _rows(joined)


def test_joins_spark_broadcasts_are_left_alone(
    spark: Any, tables: dict[str, str], form: str
) -> None:
    f, d = tables["f"], tables["d"]
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "10MB")
    try:
        _unchanged(spark, f"SELECT * FROM {f} x JOIN {d} y ON x.k = y.k")
        # a LEFT join cannot build on its left side: the preserved dimension is copied
        assert LABEL[form] in _same_answer(
            spark, f"SELECT * FROM {d} x LEFT JOIN {f} y ON x.k = y.k"
        )
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")


def test_merge_into_a_reported_table_is_left_as_written(spark: Any, tables: dict[str, str]) -> None:
    """Iceberg's MERGE reads its target through one scan that also picks the files its
    commit replaces: the rule leaves the row-level write alone (it may still salt the
    separate query that finds the files to replace: same files), and every row is kept."""
    f, d = tables["f"], tables["d"]
    target = f.replace(".`f`", ".`m`")
    spark.sql(f"CREATE TABLE {target} USING iceberg AS SELECT * FROM {f}")
    _store(spark, target, _report(spark, target, "k"))
    before = spark.sql(f"SELECT count(*), sum(v) FROM {target}").collect()[0]
    matched = spark.sql(f"SELECT count(*) FROM {target} WHERE k IN (SELECT k FROM {d})").collect()[
        0
    ][0]
    merge = (
        f"MERGE INTO {target} t USING (SELECT DISTINCT k FROM {d}) s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = t.v + 1"
    )
    with rule(spark, True):
        written = _optimized(spark, merge).split("dynamicpruning")[0]
        assert "MergeRows" in written
        assert "icefloe_" not in written
        spark.sql(merge)
    after = spark.sql(f"SELECT count(*), sum(v) FROM {target}").collect()[0]
    assert after[0] == before[0]
    assert after[1] == before[1] + matched
    spark.sql(f"DROP TABLE {target}")
