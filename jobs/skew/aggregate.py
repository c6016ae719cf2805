"""Salted two-phase aggregation that equals the plain ``groupBy(...).agg(...)``.

    from icefloe.jobs.skew.aggregate import salted_aggregate

Which aggregates :func:`salted_aggregate` splits, and why:

* ``count``, ``sum``, ``min``, ``max`` — partials over ``(key, salt)`` combine exactly
  (count → sum of counts). Integer and decimal sums are exact; a double sum depends on
  addition order in Spark anyway, so it equals the plain one up to rounding.
* ``avg`` / ``mean`` — as ``sum / count``, computed like Spark's own Average (the sum as
  double, or decimal with Spark's precision) and cast to the plain result type.
* ``count_distinct`` — the salt of a hot-key row is a hash of *the counted value*, so each
  distinct value lands in exactly one bucket and per-bucket distinct counts add up. All
  ``count_distinct`` aggregates of one call must count the same column.
* refused (:class:`UsageError`): ``collect_list``, ``collect_set``, ``percentile``,
  ``percentile_approx``, ``median``, ``mode``, ``first``, ``last``, ``stddev``,
  ``variance`` and anything else — their result needs every value of the key in one place,
  or is order-dependent. Run those on the plain ``groupBy``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icefloe.base.errors import UsageError
from icefloe.jobs.skew.hot_keys import detect_hot_keys, key_columns, key_lookup, measure_keys
from icefloe.jobs.skew.join_strategies import SALT, row_hash
from icefloe.jobs.skew.salting import check_salts
from icefloe.optimizer.skew_stats import HotKeyRules, salt_count

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

SPLITTABLE = ("count", "sum", "min", "max", "avg", "mean", "count_distinct")

Aggs = Mapping[str, tuple[str, str]]


def _plain_expr(func: str, col: str) -> Column:
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    if func == "count":
        return F.count(F.lit(1)) if col == "*" else F.count(F.col(col))
    if func == "count_distinct":
        return F.count_distinct(F.col(col))
    if func in ("avg", "mean"):
        return F.avg(F.col(col))
    result: Column = getattr(F, func)(F.col(col))
    return result


def _validate(df: DataFrame, aggs: Aggs) -> str | None:
    if not aggs:
        raise UsageError("no aggregates given")
    distinct_cols = set()
    for alias, spec in aggs.items():
        if not isinstance(spec, tuple) or len(spec) != 2:
            raise UsageError(f"aggregate {alias!r} must be (function, column), got {spec!r}")
        func, col = spec
        if func not in SPLITTABLE:
            raise UsageError(
                f"aggregate {func!r} ({alias!r}) cannot be split into salted partial "
                f"aggregates; supported: {', '.join(SPLITTABLE)}"
            )
        if not (func == "count" and col == "*") and col not in df.columns:
            raise UsageError(f"aggregate {alias!r}: column {col!r} not found")
        if func == "count_distinct":
            distinct_cols.add(col)
    if len(distinct_cols) > 1:
        raise UsageError(
            f"count_distinct over several columns {sorted(distinct_cols)} cannot share one salt"
        )
    return next(iter(distinct_cols), None)


def salted_aggregate(
    df: DataFrame,
    by: str | Sequence[str],
    aggs: Aggs,
    hot_keys: Iterable[Any] | None = None,
    salts: Mapping[Any, int] | int | None = None,
    *,
    rules: HotKeyRules = HotKeyRules(),
    partitions: int | None = None,
    max_salts: int = 64,
) -> DataFrame:
    """``df.groupBy(by).agg(...)`` in two phases, hot keys split over salts first.

    ``aggs``: ``{alias: (function, column)}``, e.g. ``{"n": ("count", "*"), "total":
    ("sum", "amount")}``; the result has the ``by`` columns then the aliases, with the
    plain aggregation's types. NULL is a group like any other (it can be hot).
    """
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    cols = key_columns(df, by)
    distinct_col = _validate(df, aggs)
    plain = df.groupBy(*cols).agg(*[_plain_expr(f, c).alias(a) for a, (f, c) in aggs.items()])
    if SALT in df.columns:
        raise UsageError(f"input already has a column named {SALT!r}")
    parts = partitions or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    if hot_keys is None:
        report = detect_hot_keys(df, cols, rules, method="sample", null_is_key=True)
        counts = {h.key: h.rows for h in report.hot}
        total = report.rows
    else:
        given = list(dict.fromkeys(hot_keys))
        measured, null_rows, total = measure_keys(df, cols, [k for k in given if k is not None])
        counts = {k: null_rows if k is None else measured[k] for k in given}
    check_salts(salts)
    if isinstance(salts, int):
        chosen = {k: salts for k in counts}
    elif salts is not None:
        chosen = {k: int(n) for k, n in salts.items()}
    else:
        target = max(1, total // parts)
        chosen = {k: salt_count(n, target, 0, None, max_salts) for k, n in counts.items()}
    chosen = {k: n for k, n in chosen.items() if n > 1}
    if not chosen:
        return plain

    h = F.xxhash64(F.col(distinct_col)) if distinct_col else row_hash(df)
    n = key_lookup(cols, chosen, null_safe=True)
    salted = df.withColumn(SALT, F.when(n.isNotNull(), F.pmod(h, n)).otherwise(F.lit(0)))
    partial_exprs: list[Column] = []
    final_exprs: list[Column] = []
    types = {f.name: f.dataType for f in plain.schema.fields}
    for alias, (func, col) in aggs.items():
        p = f"__p_{alias}"
        if func in ("count", "count_distinct"):
            partial_exprs.append(_plain_expr(func, col).alias(p))
            final = F.coalesce(F.sum(p), F.lit(0))
        elif func in ("sum", "min", "max"):
            partial_exprs.append(_plain_expr(func, col).alias(p))
            final = getattr(F, func)(p)
        else:  # avg: Spark's Average keeps its sum as double (or wider decimal)
            sum_type = _avg_sum_type(df, col)
            partial_exprs.append(F.sum(F.col(col).cast(sum_type)).alias(p + "_s"))
            partial_exprs.append(F.count(F.col(col)).alias(p + "_n"))
            total_sum = F.sum(p + "_s").cast(sum_type)
            count = F.sum(p + "_n")
            divisor = count.cast("decimal(20,0)") if sum_type != "double" else count
            final = F.when(count > 0, total_sum / divisor)
        final_exprs.append(final.cast(types[alias]).alias(alias))
    phase1 = salted.groupBy(*cols, SALT).agg(*partial_exprs)
    return phase1.groupBy(*cols).agg(*final_exprs)


def _avg_sum_type(df: DataFrame, col: str) -> str:
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql.types import DecimalType

    dtype = df.schema[col].dataType
    if isinstance(dtype, DecimalType):
        return f"decimal({min(38, dtype.precision + 10)},{dtype.scale})"
    return "double"
