"""Hot keys and partition skew of any DataFrame: the counting half of skew detection.

The Spark side only counts; the rules (what is hot, what is an outlier) are the pure
core's (:mod:`icefloe.optimizer.skew_stats`). Two ways to count keys:

* ``exact`` — one GROUP BY over the key columns; the key counts stay in Spark and only the
  candidates above the thresholds come back to the driver.
* ``sample`` — for large inputs: count a Bernoulli sample (fixed seed), keep keys whose
  sampled share reaches half the thresholds, then count just those candidates exactly in
  one filtered pass. The reported counts are therefore exact; only a key whose sampled
  share falls below half the threshold can be missed.

The key helpers here (``key_equals``, ``key_lookup``...) build NULL-correct expressions over
one or several key columns without concatenating or casting them; the salted joins and
aggregations use them too. Table-level detection and the stored reports are in
:mod:`icefloe.jobs.skew.detect`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

from icefloe.base.errors import UsageError
from icefloe.jobs.base.verify import has_null
from icefloe.optimizer.skew_stats import (
    HotKey,
    HotKeyRules,
    SkewMetrics,
    hot_keys,
    sigma_outliers,
    skew_metrics,
)

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
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    return reduce(lambda a, b: a | b, [F.col(c).isNull() for c in cols])


def key_equals(cols: Sequence[str], key: Any, null_safe: bool = False) -> Column:
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    values = (key,) if len(cols) == 1 else tuple(key)
    if len(values) != len(cols):
        raise UsageError(f"hot key {key!r} does not have {len(cols)} values for {list(cols)}")
    parts = [
        F.col(c).eqNullSafe(F.lit(v)) if null_safe else F.col(c) == F.lit(v)
        for c, v in zip(cols, values, strict=True)
    ]
    return reduce(lambda a, b: a & b, parts)


def key_lookup(cols: Sequence[str], values: Mapping[Any, Any], null_safe: bool = False) -> Column:
    """``CASE WHEN key = k1 THEN v1 ... END`` (NULL for any other key)."""
    # pyspark: only where Spark runs (the module loads without it)
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
                {"key": jsonable(h.key), "rows": h.rows, "share": round(h.share, 6)}
                for h in self.hot
            ],
            "metrics": None if self.metrics is None else asdict(self.metrics),
            "rules": asdict(self.rules),
        }


def jsonable(key: Any) -> Any:
    if isinstance(key, tuple):
        return [jsonable(k) for k in key]
    if key is None or isinstance(key, (bool, int, float, str)):
        return key
    return str(key)


def measure_keys(
    df: DataFrame, cols: Sequence[str], keys: Sequence[Any]
) -> tuple[dict[Any, int], int, int]:
    """Exact rows of ``keys``, NULL-key rows and all rows of ``df`` in one pass."""
    # pyspark: only where Spark runs (the module loads without it)
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
    sample_median, counted = _sample_counts(
        keys.sample(fraction=fraction, seed=SAMPLE_SEED), cols, share_floor
    )
    floor = max(share_floor, rules.median_multiple * sample_median / 2)
    ranked = sorted(counted, key=lambda kc: -kc[1])
    candidates = [k for k, n in ranked if n >= floor]
    candidates = [k for k in candidates if null_is_key or not has_null(k)]
    candidates = candidates[: 4 * rules.max_keys + 4]
    null_rows = 0
    if candidates:  # exact counts of the few candidates, and the exact total, in one pass
        measured, null_rows, total = measure_keys(df, cols, candidates)
    else:
        measured = {}
    hot = hot_keys(
        measured.items(),
        rules,
        total_rows=total,
        median=sample_median / fraction,
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
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, DateType, IntegralType, StringType

    simple = (IntegralType, StringType, BooleanType, DateType)
    if all(isinstance(sample.schema[c].dataType, simple) for c in cols):
        table = sample.toArrow()
        counts = table.group_by(list(cols), use_threads=False).aggregate([([], "count_all")])
        ns = counts.column("count_all").to_pylist()
        keys = zip(*(counts.column(c).to_pylist() for c in cols), strict=True)
        found = [
            (k[0] if len(cols) == 1 else tuple(k), n)
            for k, n in zip(keys, ns, strict=True)
            if n >= floor
        ]
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
    # pyspark: only where Spark runs (the module loads without it)
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
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    pid = F.spark_partition_id().alias("p")
    counts = {int(r["p"]): int(r["count"]) for r in df.select(pid).groupBy("p").count().collect()}
    n = max(df.rdd.getNumPartitions(), max(counts, default=-1) + 1)
    rows = tuple(counts.get(i, 0) for i in range(n))
    outliers = tuple(sigma_outliers(dict(enumerate(rows))))
    return PartitionSkew(rows, outliers, skew_metrics(rows))


# --------------------------------------------------------------------------------------
# Iceberg tables: storage skew from metadata, key skew counted, reports kept per snapshot
