"""How a skew-handling join is built: salted rows, replicated rows, isolated hot keys.

:mod:`icefloe.jobs.skew.salting` decides (which keys, how many salts, which strategy); this module
builds the DataFrames. See :mod:`icefloe.jobs.skew.salting` for why each construction is exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icefloe.jobs.base.verify import row_hash
from icefloe.jobs.skew.hot_keys import key_is_null, key_lookup
from icefloe.optimizer.skew_stats import spread_salts

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

SALT = "__icefloe_salt"
MARK = "__icefloe_present"

__all__ = [
    "MARK",
    "SALT",
    "row_hash",
]  # row_hash: the one of icefloe.jobs.base.verify, maps included


def _bucket(h: Column, n: Column | int) -> Column:
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    return F.pmod(h, n if not isinstance(n, int) else F.lit(n)).cast("int")


def salt_rows(
    df: DataFrame, cols: Sequence[str], values: Mapping[Any, list[int]], nulls: int
) -> DataFrame:
    """Salt of a row: one of its key's salt values, picked by the hash of the row."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    arrays = key_lookup(cols, {k: F.array(*map(F.lit, v)) for k, v in values.items()})
    h = row_hash(df)
    salt = (
        F.when(arrays.isNotNull(), F.element_at(arrays, _bucket(h, F.size(arrays)) + 1))
        .when(key_is_null(cols), _bucket(h, nulls))
        .otherwise(F.lit(0))
    )
    return df.withColumn(SALT, salt.cast("int"))


def replicate_rows(
    df: DataFrame, cols: Sequence[str], values: Mapping[Any, list[int]], nulls: int
) -> DataFrame:
    """One copy of a row per salt value of its key (NULL keys: one copy, hashed)."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    arrays = key_lookup(cols, {k: F.array(*map(F.lit, v)) for k, v in values.items()})
    copies = (
        F.when(arrays.isNotNull(), arrays)
        .when(key_is_null(cols), F.array(_bucket(row_hash(df), nulls)))
        .otherwise(F.array(F.lit(0)))
    )
    return df.select("*", F.explode(copies).alias(SALT))


def salt_values(
    left: DataFrame,
    right: DataFrame,
    cols: Sequence[str],
    salts: Mapping[Any, int],
    rows: Mapping[Any, int],
    partitions: int,
) -> dict[Any, list[int]]:
    """Salt values per key whose ``(key, salt)`` land on distinct shuffle partitions.

    Evaluates Spark's shuffle hash (``pmod(hash(key..., salt), partitions)``, the same
    Murmur3 as HashPartitioning) for candidate salts in one tiny query, then lets the core
    (:func:`icefloe.optimizer.skew_stats.spread_salts`) choose. Falls back to ``0..N-1`` when the
    two sides' key types differ (the join would hash a coerced type).
    """
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    plain = {k: list(range(n)) for k, n in salts.items()}
    types = [left.schema[c].dataType for c in cols]
    if types != [right.schema[c].dataType for c in cols] or not salts:
        return plain
    keys = list(salts)
    n_cand = min(4096, max(4 * partitions, 2 * max(salts.values())))
    exprs = []
    for i, key in enumerate(keys):
        values = (key,) if len(cols) == 1 else tuple(key)
        lits = [F.lit(v).cast(t) for v, t in zip(values, types, strict=True)]
        exprs.append(
            F.pmod(F.hash(*lits, F.col("id").cast("int")), F.lit(partitions)).alias(f"p{i}")
        )
    got = left.sparkSession.range(n_cand).select(*exprs).collect()
    table = {k: [int(r[f"p{i}"]) for r in got] for i, k in enumerate(keys)}
    return spread_salts(table, salts, rows, partitions)


def broadcastable(kind: str, skewed_side: str) -> bool:
    """Whether a broadcast hash join can build on the side that is *not* skewed."""
    if kind in ("inner", "left_semi", "left_anti"):
        return kind == "inner" or skewed_side == "left"
    return kind == skewed_side  # left join skewed left, right join skewed right


def isolate_and_broadcast(
    left: DataFrame,
    right: DataFrame,
    cols: list[str],
    kind: str,
    skewed_side: str,
    hot: Mapping[Any, int],
    hash_build: bool = False,
) -> DataFrame:
    """Plain join of the other keys, union the hot keys' broadcast join (same schema).

    ``hash_build``: join the cold keys with a shuffled hash join built on the other side
    instead of a sort-merge join (no sort of the big side). With a hot key in it a hash
    build can blow one task's memory, which is why Spark prefers sorting; with the hot
    keys taken out and the side small per task it is safe, and much faster.
    """
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    is_hot = key_lookup(cols, {k: True for k in hot})  # NULL for NULL keys and cold keys
    cold_left, cold_right = left.filter(is_hot.isNull()), right.filter(is_hot.isNull())
    if hash_build:
        if skewed_side == "left":
            cold_right = cold_right.hint("shuffle_hash")
        else:
            cold_left = cold_left.hint("shuffle_hash")
    cold = plain_join(cold_left, cold_right, cols, kind)
    hot_left, hot_right = left.filter(is_hot.isNotNull()), right.filter(is_hot.isNotNull())
    if kind in ("left_semi", "left_anti"):
        hot_right = hot_right.select(*cols).distinct()
    if skewed_side == "left":
        hot_join = hot_left.join(F.broadcast(hot_right), on=cols, how=kind)
    else:
        hot_join = F.broadcast(hot_left).join(hot_right, on=cols, how=kind)
    return cold.union(hot_join)


def plain_join(left: DataFrame, right: DataFrame, cols: list[str], kind: str) -> DataFrame:
    return left.join(right, on=cols, how=kind)
