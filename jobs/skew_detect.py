"""Hot-key and partition-skew detection, over DataFrames and over Iceberg tables.

The Spark side only counts; the rules (what is hot, what is an outlier) are the pure
core's (:mod:`optimizer.skew`). Two ways to count keys:

* ``exact`` — one GROUP BY over the key columns; the key counts stay in Spark and only the
  candidates above the thresholds come back to the driver.
* ``sample`` — for large inputs: count a Bernoulli sample (fixed seed), keep keys whose
  sampled share reaches half the thresholds, then count just those candidates exactly in
  one filtered pass. The reported counts are therefore exact; only a key whose sampled
  share falls below half the threshold can be missed.

Table detection reads storage skew from Iceberg metadata only (``inspect.partitions()``,
no data file is opened), counts keys with Spark, and persists the report per table
snapshot in ``<namespace>.skew_reports`` so later jobs (and :func:`salted_join`) reuse it.

Run as ``spark-submit jobs/skew_detect.py TABLE --key COL [--key COL] [--join-with T2
--on COL] [--json] [--config PATH]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optimizer.skew import (  # noqa: E402
    HotKey,
    HotKeyRules,
    SkewMetrics,
    hot_keys,
    skew_metrics,
)
from service.errors import UsageError  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

SAMPLE_ROWS = 200_000  # rows counted by the sample pass
SAMPLE_SEED = 20261122
EXACT_BELOW = 2_000_000  # "auto" counts exactly below this many rows


def key_columns(df: DataFrame, on: str | Sequence[str], what: str = "input") -> list[str]:
    """``on`` as a list of column names of ``df``; a UsageError names a missing one."""
    cols = [on] if isinstance(on, str) else list(on)
    if not cols:
        raise UsageError("no key column given")
    for c in cols:
        if c not in df.columns:
            raise UsageError(f"key column {c!r} not found in {what} (columns: {df.columns})")
    return cols


def key_value(cols: Sequence[str], row: Any) -> Any:
    """A key as the user writes it: the value for one column, a tuple for several."""
    values = tuple(row[c] for c in cols)
    return values[0] if len(cols) == 1 else values


def key_is_null(cols: Sequence[str]) -> Column:
    """True when any key column is NULL: such a row never equals anything in a join."""
    from pyspark.sql import functions as F

    return reduce(lambda a, b: a | b, [F.col(c).isNull() for c in cols])


def key_equals(cols: Sequence[str], key: Any, null_safe: bool = False) -> Column:
    from pyspark.sql import functions as F

    values = (key,) if len(cols) == 1 else tuple(key)
    if len(values) != len(cols):
        raise UsageError(f"hot key {key!r} does not have {len(cols)} values for {list(cols)}")
    parts = [
        F.col(c).eqNullSafe(F.lit(v)) if null_safe else F.col(c) == F.lit(v)
        for c, v in zip(cols, values, strict=True)
    ]
    return reduce(lambda a, b: a & b, parts)


def key_lookup(cols: Sequence[str], values: dict[Any, Any], null_safe: bool = False) -> Column:
    """``CASE WHEN key = k1 THEN v1 ... END`` (NULL for any other key)."""
    from pyspark.sql import functions as F

    expr: Any = F
    for key, value in values.items():
        expr = expr.when(key_equals(cols, key, null_safe), F.lit(value))
    if expr is F:
        return F.lit(None).cast("int")
    result: Column = expr
    return result


@dataclass(frozen=True)
class KeyReport:
    """Hot keys of one key (one column or a column tuple) of one input."""

    columns: tuple[str, ...]
    rows: int
    null_rows: int
    hot: tuple[HotKey, ...]
    method: str
    distinct_keys: int | None = None
    metrics: SkewMetrics | None = None
    rules: HotKeyRules = field(default_factory=HotKeyRules)

    def as_json(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "rows": self.rows,
            "null_rows": self.null_rows,
            "method": self.method,
            "distinct_keys": self.distinct_keys,
            "hot_keys": [
                {"key": _jsonable(h.key), "rows": h.rows, "share": round(h.share, 6)}
                for h in self.hot
            ],
            "metrics": None if self.metrics is None else asdict(self.metrics),
            "rules": asdict(self.rules),
        }


def _jsonable(key: Any) -> Any:
    if isinstance(key, tuple):
        return [_jsonable(k) for k in key]
    if key is None or isinstance(key, (bool, int, float, str)):
        return key
    return str(key)


def measure_keys(df: DataFrame, cols: Sequence[str], keys: Sequence[Any]) -> tuple[
    dict[Any, int], int, int
]:
    """Exact rows of ``keys``, NULL-key rows and all rows of ``df`` in one pass."""
    from pyspark.sql import functions as F

    tag = F.lit(None).cast("int")
    for i, key in enumerate(keys):
        tag = F.when(key_equals(cols, key), F.lit(i)).otherwise(tag)
    tag = F.when(key_is_null(cols), F.lit(-1)).otherwise(tag)
    rows = df.select(tag.alias("t")).groupBy("t").count().collect()
    counts = {r["t"]: int(r["count"]) for r in rows}
    hot = {key: counts.get(i, 0) for i, key in enumerate(keys)}
    return hot, counts.get(-1, 0), sum(counts.values())


def detect_hot_keys(
    df: DataFrame,
    on: str | Sequence[str],
    rules: HotKeyRules = HotKeyRules(),
    method: str = "auto",
    total_rows: int | None = None,
    sample_rows: int = SAMPLE_ROWS,
    null_is_key: bool = False,
    with_metrics: bool = False,
) -> KeyReport:
    """Hot keys of ``on`` in ``df`` by the core's rules (exact counts for the reported keys).

    ``method``: ``exact``, ``sample`` or ``auto`` (sample when the row count is known and at
    least 2M). ``total_rows`` saves a count when the caller knows it (Iceberg metadata);
    otherwise the optimizer's row count (Iceberg scans, materialized caches) is used.
    ``with_metrics`` adds the distribution of rows per key (max/median, CV, Gini) from
    exact counts.
    """
    from pyspark.sql import functions as F

    if method not in ("auto", "exact", "sample"):
        raise UsageError(f"unknown detection method {method!r} (auto, exact, sample)")
    cols = key_columns(df, on)
    keys = df.select(*cols)
    estimate = total_rows if total_rows is not None else estimated_rows(df)
    if method == "auto":
        method = "sample" if estimate is not None and estimate >= EXACT_BELOW else "exact"
    if method == "exact" or (estimate is not None and estimate <= sample_rows):
        counts = keys.groupBy(*cols).count().persist()
        try:
            return _exact_report(counts, cols, rules, null_is_key, with_metrics)
        finally:
            counts.unpersist()
    total = estimate if estimate is not None else keys.count()
    fraction = min(1.0, sample_rows / max(total, 1))
    share_floor = max(3.0, rules.min_share * total * fraction / 2)
    sample_median, counted = _sample_counts(keys.sample(fraction=fraction, seed=SAMPLE_SEED),
                                            cols, share_floor)
    floor = max(share_floor, rules.median_multiple * sample_median / 2)
    ranked = sorted(counted, key=lambda kc: -kc[1])
    candidates = [k for k, n in ranked if n >= floor]
    candidates = [k for k in candidates if null_is_key or not _has_null(k)]
    candidates = candidates[: 4 * rules.max_keys + 4]
    null_rows = 0
    if candidates:  # exact counts of the few candidates, and the exact total, in one pass
        measured, null_rows, total = measure_keys(df, cols, candidates)
    else:
        measured = {}
    hot = hot_keys(
        measured.items(), rules, total_rows=total, median=sample_median / fraction,
        null_is_key=null_is_key,
    )
    return KeyReport(tuple(cols), total, null_rows, tuple(hot), "sample", None, None, rules)


def _sample_counts(
    sample: DataFrame, cols: Sequence[str], floor: float
) -> tuple[float, list[tuple[Any, int]]]:
    """Median rows per key of a sample, and the keys with at least ``floor`` rows.

    Simple key types come back as one Arrow batch and are counted on the driver (one scan,
    no shuffle: a sample is small); other types are counted by Spark.
    """
    import statistics

    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, DateType, IntegralType, StringType

    simple = (IntegralType, StringType, BooleanType, DateType)
    if all(isinstance(sample.schema[c].dataType, simple) for c in cols):
        table = sample.toArrow()
        counts = table.group_by(list(cols), use_threads=False).aggregate([([], "count_all")])
        ns = counts.column("count_all").to_pylist()
        keys = zip(*(counts.column(c).to_pylist() for c in cols), strict=True)
        found = [(k[0] if len(cols) == 1 else tuple(k), n)
                 for k, n in zip(keys, ns, strict=True) if n >= floor]
        return (float(statistics.median(ns)) if ns else 0.0), found
    grouped = sample.groupBy(*cols).count()
    row = grouped.agg(
        F.percentile(F.col("count"), 0.5).alias("m"),
        F.collect_list(F.when(F.col("count") >= floor, F.struct(*cols, F.col("count")))).alias("c"),
    ).collect()[0]
    return float(row["m"] or 0.0), [(key_value(cols, r), int(r["count"])) for r in row["c"] or []]


def estimated_rows(df: DataFrame) -> int | None:
    """Row count from the optimizer's statistics when they are exact enough to trust.

    Iceberg scans report the snapshot's record count and a materialized cache its row
    count; then no counting job is needed. None when Spark has no row count.
    """
    try:
        stats = df._jdf.queryExecution().optimizedPlan().stats()
        count = stats.rowCount()
        return int(str(count.get())) if count.isDefined() else None
    except Exception:  # Spark Connect or an unexpected plan: count instead
        return None


def _exact_report(
    counts: DataFrame,
    cols: Sequence[str],
    rules: HotKeyRules,
    null_is_key: bool,
    with_metrics: bool,
) -> KeyReport:
    from pyspark.sql import functions as F

    row = counts.agg(
        F.percentile(F.col("count"), 0.5).alias("m"),
        F.sum("count").alias("n"),
        F.sum(F.when(key_is_null(cols), F.col("count"))).alias("nulls"),
    ).collect()[0]
    median, total = float(row["m"] or 0.0), int(row["n"] or 0)
    floor = max(rules.min_rows, rules.min_share * total, rules.median_multiple * median, 1)
    found = counts.filter(F.col("count") >= F.lit(floor)).orderBy(F.desc("count"))
    limit = 4 * rules.max_keys + 4
    pairs = [(key_value(cols, r), int(r["count"])) for r in found.limit(limit).collect()]
    metrics = distinct = None
    if with_metrics:
        all_counts = [int(r["count"]) for r in counts.select("count").collect()]
        metrics, distinct = skew_metrics(all_counts), len(all_counts)
    hot = hot_keys(pairs, rules, total_rows=total, median=median, null_is_key=null_is_key)
    return KeyReport(
        tuple(cols), total, int(row["nulls"] or 0), tuple(hot), "exact", distinct, metrics, rules
    )


def _has_null(key: Any) -> bool:
    return key is None or (isinstance(key, tuple) and any(k is None for k in key))


@dataclass(frozen=True)
class PartitionSkew:
    """Rows per Spark partition of a DataFrame, with the 2σ outliers and robust measures."""

    rows: tuple[int, ...]
    outliers: tuple[int, ...]
    metrics: SkewMetrics


def partition_skew(df: DataFrame) -> PartitionSkew:
    """Rows in each partition of ``df`` as it is partitioned now (one counting job).

    Use it inside a job to check a DataFrame before an expensive stage, e.g. after a
    repartition by a join key: ``partition_skew(df.repartition(64, "customer"))``.
    """
    from pyspark.sql import functions as F

    from optimizer.skew import sigma_outliers

    pid = F.spark_partition_id().alias("p")
    counts = {int(r["p"]): int(r["count"]) for r in df.select(pid).groupBy("p").count().collect()}
    n = max(df.rdd.getNumPartitions(), max(counts, default=-1) + 1)
    rows = tuple(counts.get(i, 0) for i in range(n))
    outliers = tuple(sigma_outliers(dict(enumerate(rows))))
    return PartitionSkew(rows, outliers, skew_metrics(rows))


# --------------------------------------------------------------------------------------
# Iceberg tables: storage skew from metadata, key skew counted, reports kept per snapshot

REPORTS_NAMESPACE = "icefloe"
REPORTS_TABLE = "skew_reports"


def storage_skew(table: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], SkewMetrics]:
    """Bytes, rows and files per partition from ``inspect.partitions()`` (metadata only).

    Returns every partition, the flagged ones (2σ rule on bytes or rows), and the
    robust measures of the byte sizes.
    """
    from optimizer.skew import sigma_outliers

    if table.current_snapshot() is None:
        return [], [], skew_metrics([])
    parts: list[dict[str, Any]] = []
    for row in table.inspect.partitions().to_pylist():
        part = row.get("partition") or {}
        name = "/".join(f"{k}={'null' if v is None else v}" for k, v in part.items())
        parts.append({
            "partition": name,
            "bytes": int(row["total_data_file_size_in_bytes"] or 0),
            "rows": int(row["record_count"] or 0),
            "files": int(row["file_count"] or 0),
        })
    parts.sort(key=lambda p: p["partition"])
    by_bytes = sigma_outliers({p["partition"]: p["bytes"] for p in parts})
    by_rows = sigma_outliers({p["partition"]: p["rows"] for p in parts})
    flagged = set(by_bytes) | set(by_rows)
    skewed = sorted((p for p in parts if p["partition"] in flagged), key=lambda p: -p["bytes"])
    return parts, skewed, skew_metrics(p["bytes"] for p in parts)


def detect_table(
    spark: Any,
    cfg: Any,
    catalog: Any,
    table: str,
    keys: Sequence[str],
    join_with: str | None = None,
    on: str | None = None,
    rules: HotKeyRules = HotKeyRules(),
    method: str = "auto",
    reports_namespace: str = REPORTS_NAMESPACE,
    refresh: bool = False,
) -> dict[str, Any]:
    """The skew report of ``table`` at its current snapshot (reused when already stored)."""
    from service.catalog import load_table, spark_table_name

    tbl = load_table(catalog, table)
    snap = tbl.current_snapshot()
    snapshot_id = None if snap is None else snap.snapshot_id
    key_sets = [[k] for k in dict.fromkeys(keys)]
    if on and [on] not in key_sets:
        key_sets.append([on])
    if not key_sets:
        raise UsageError("give at least one --key column")
    columns = {f.name for f in tbl.schema().fields}
    for ks in key_sets:
        for c in ks:
            if c not in columns:
                raise UsageError(f"column {c!r} not found in table {table!r}")
    other = load_table(catalog, join_with) if join_with else None
    if join_with and not on:
        raise UsageError("--join-with needs --on COL")
    if other is not None and on not in {f.name for f in other.schema().fields}:
        raise UsageError(f"column {on!r} not found in table {join_with!r}")
    tag = ",".join(keys) + (f"|{join_with}.{on}" if join_with else "") + f"|{rules}"
    if not refresh and snapshot_id is not None:
        cached = load_report(catalog, table, snapshot_id, tag, reports_namespace)
        if cached is not None:
            cached["cached"] = True
            return cached
    parts, skewed, part_metrics = storage_skew(tbl)
    total = int(snap.summary.get("total-records") or 0) if snap and snap.summary else 0
    df = spark.table(spark_table_name(cfg, table))
    report: dict[str, Any] = {
        "table": table,
        "snapshot_id": snapshot_id,
        "rows": total,
        "keys": {},
        "partitions": len(parts),
        "skewed_partitions": skewed,
        "metrics": {"partition_bytes": asdict(part_metrics)},
        "cached": False,
    }
    for ks in key_sets:
        kr = detect_hot_keys(df, ks, rules, method=method, total_rows=total or None,
                             with_metrics=method != "sample")
        entry = kr.as_json()
        if other is not None and ks == [on]:
            entry["join"] = _join_estimate(spark, cfg, join_with or "", on or "", kr)
        report["keys"][",".join(ks)] = entry
    if snapshot_id is not None:
        save_report(catalog, report, tag, reports_namespace)
    return report


def _join_estimate(spark: Any, cfg: Any, other: str, on: str, kr: KeyReport) -> dict[str, Any]:
    """Output rows each hot key would produce joined with ``other`` (rows × other rows)."""
    from service.catalog import spark_table_name

    keys = [h.key for h in kr.hot]
    odf = spark.table(spark_table_name(cfg, other))
    counts, _, other_rows = measure_keys(odf, [on], keys) if keys else ({}, 0, odf.count())
    per_key = [
        {"key": _jsonable(h.key), "rows": h.rows, "other_rows": counts.get(h.key, 0),
         "output_rows": h.rows * counts.get(h.key, 0)}
        for h in kr.hot
    ]
    return {"with": other, "on": on, "other_rows": other_rows, "hot_keys": per_key,
            "hot_output_rows": sum(p["output_rows"] for p in per_key)}


def _reports_table(catalog: Any, namespace: str, create: bool) -> Any:
    from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

    ident = (namespace, REPORTS_TABLE)
    try:
        return catalog.load_table(ident)
    except NoSuchTableError:
        if not create:
            return None
    except Exception as e:  # a missing namespace
        if type(e).__name__ != "NoSuchNamespaceError" or not create:
            raise
    try:
        catalog.create_namespace(namespace)
    except NamespaceAlreadyExistsError:
        pass
    schema = Schema(
        NestedField(1, "table_name", StringType(), required=False),
        NestedField(2, "snapshot_id", LongType(), required=False),
        NestedField(3, "tag", StringType(), required=False),
        NestedField(4, "created_at", TimestamptzType(), required=False),
        NestedField(5, "report", StringType(), required=False),
    )
    return catalog.create_table_if_not_exists(ident, schema)


def save_report(catalog: Any, report: dict[str, Any], tag: str, namespace: str) -> None:
    """Append one report row (table, snapshot, tag, JSON) to ``<namespace>.skew_reports``."""
    import datetime as dt

    import pyarrow as pa

    tbl = _reports_table(catalog, namespace, create=True)
    row = pa.table({
        "table_name": pa.array([report["table"]], pa.string()),
        "snapshot_id": pa.array([report["snapshot_id"]], pa.int64()),
        "tag": pa.array([tag], pa.string()),
        "created_at": pa.array([dt.datetime.now(dt.UTC)], pa.timestamp("us", tz="UTC")),
        "report": pa.array([json.dumps(report, default=str, sort_keys=True)], pa.string()),
    })
    tbl.append(row)


def load_report(
    catalog: Any, table: str, snapshot_id: int | None = None, tag: str | None = None,
    namespace: str = REPORTS_NAMESPACE,
) -> dict[str, Any] | None:
    """The newest stored report of ``table`` (at ``snapshot_id`` / with ``tag`` if given)."""
    from service.config import parse_table_identifier

    parse_table_identifier(table)  # safe to quote into the filter below
    tbl = _reports_table(catalog, namespace, create=False)
    if tbl is None:
        return None
    cond = f"table_name = '{table}'"
    if snapshot_id is not None:
        cond += f" AND snapshot_id = {int(snapshot_id)}"
    rows = tbl.scan(row_filter=cond).to_arrow().to_pylist()
    rows = [r for r in rows if tag is None or r["tag"] == tag]
    if not rows:
        return None
    newest = max(rows, key=lambda r: r["created_at"])
    result: dict[str, Any] = json.loads(newest["report"])
    return result


def stored_hot_keys(
    catalog: Any, table: str, column: str, namespace: str = REPORTS_NAMESPACE
) -> list[Any] | None:
    """Hot keys of ``column`` from the newest report at the table's current snapshot."""
    from service.catalog import load_table

    snap = load_table(catalog, table).current_snapshot()
    report = load_report(catalog, table, None if snap is None else snap.snapshot_id,
                         None, namespace)
    if report is None or column not in report.get("keys", {}):
        return None
    return [h["key"] for h in report["keys"][column]["hot_keys"]]


def render_text(report: dict[str, Any]) -> str:
    """A short human summary of a report (the CLI prints this without ``--json``)."""
    lines = [f"{report['table']} @ {report['snapshot_id']}: {report['rows']} rows, "
             f"{report['partitions']} partitions" + (" (cached)" if report.get("cached") else "")]
    for col, entry in report["keys"].items():
        hot = ", ".join(f"{h['key']!r} {h['rows']} ({h['share']:.1%})" for h in entry["hot_keys"])
        lines.append(f"  key {col}: {hot or 'no hot keys'} [{entry['method']}]")
        if "join" in entry:
            j = entry["join"]
            lines.append(f"    join with {j['with']} on {j['on']}: hot keys produce "
                         f"{j['hot_output_rows']} rows")
    for p in report["skewed_partitions"]:
        lines.append(f"  skewed partition {p['partition']}: {p['bytes']} bytes, "
                     f"{p['rows']} rows, {p['files']} files")
    if not report["skewed_partitions"]:
        lines.append("  no skewed partitions")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``spark-submit jobs/skew_detect.py TABLE --key COL ... [--json] [--config PATH]``."""
    from jobs.session import build_spark
    from service.catalog import load_catalog
    from service.config import load_config
    from service.errors import IcefloeError

    parser = argparse.ArgumentParser(prog="skew_detect", description=__doc__.split("\n")[0])
    parser.add_argument("table")
    parser.add_argument("--key", action="append", default=[], required=True)
    parser.add_argument("--join-with")
    parser.add_argument("--on")
    parser.add_argument("--method", default="auto", choices=["auto", "exact", "sample"])
    parser.add_argument("--reports-namespace", default=REPORTS_NAMESPACE)
    parser.add_argument("--refresh", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--config")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.config)
        catalog = load_catalog(cfg)
        spark = build_spark(cfg, app_name="icefloe-skew-detect")
        report = detect_table(spark, cfg, catalog, args.table, args.key, args.join_with,
                              args.on, method=args.method,
                              reports_namespace=args.reports_namespace, refresh=args.refresh)
    except IcefloeError as e:
        print(f"skew_detect: error: {e}", file=sys.stderr)
        return e.exit_code
    print(json.dumps(report, indent=2, sort_keys=True, default=str) if args.json
          else render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
