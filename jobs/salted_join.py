"""Salted joins: the plain join's exact result, with each hot key spread over N tasks.

Recipe (``shared/reference/skew.md``): rows of a hot key on the *salted* side get a salt
in ``[0, N)``; the *replicated* side's rows of that key are copied once per salt; the
join runs on ``(key, salt)``. Here it is one join, not split-and-union, and exact:

* the salt is ``pmod(xxhash64(all columns), N)`` — a function of the row, so a retried
  task salts identically (``rand()`` would not); exact duplicate rows share a bucket;
* every other key has salt 0 on both sides and joins as before;
* NULL keys never match, so they are not replicated: their rows are spread by the same
  hash over their own buckets (a pile of NULLs is a classic straggler in outer joins);
* the key columns are never concatenated or cast (``concat`` turns NULL into a match);
* when the replicated side must keep its unmatched rows (a LEFT join whose right side is
  skewed, RIGHT, FULL), an unmatched *copy* of a row whose key the salted side holds is
  dropped: the same row is matched in another bucket. Hot keys absent from the salted
  side are not salted, so their rows come out once, null-padded;
* LEFT SEMI / LEFT ANTI join against the right side's distinct keys (same answer, the
  right side's duplicates gone), salting the left side when it is the skewed one.

Where the join type allows it, a second strategy beats salting: *isolate and broadcast*.
The hot keys' rows of the skewed side join a broadcast of the other side's hot-key rows
map-side (no shuffle of the hot rows at all); every other row takes the plain shuffle
join; the two results are unioned. Each row of the skewed side is in exactly one branch
and finds all its partners there, so the union is the plain result. It needs the other
side's hot-key rows to be few (``broadcast_rows``) and the skewed side to be the one whose
unmatched rows are kept or dropped by a broadcast hash join: inner, semi and anti joins,
a LEFT join skewed on the left, a RIGHT join skewed on the right. ``strategy="auto"``
takes it when it applies, salting otherwise.

The guardrail (:func:`optimizer.skew.salt_plan`) runs the plain join when no key is hot
or the predicted gain is below the replication cost. Keys are given as column names
present on both sides (a USING join), so the output schema is exactly the plain one's.

``spark-submit jobs/salted_join.py LEFT RIGHT --on COL --how left --into OUT`` joins two
Iceberg tables (or ``--right-sql "SELECT ..."``) and writes ``OUT``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.skew_detect import (  # noqa: E402
    detect_hot_keys,
    estimated_rows,
    key_columns,
    key_is_null,
    key_lookup,
    measure_keys,
)
from optimizer.skew import HotKeyRules, salt_count, salt_plan, spread_salts  # noqa: E402
from service.errors import UsageError  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

SALT = "__icefloe_salt"
MARK = "__icefloe_present"
STRATEGIES = ("auto", "salt", "broadcast")
BROADCAST_ROWS = 200_000  # hot-key rows of the other side that auto may broadcast

JOIN_TYPES = {
    "inner": "inner",
    "left": "left", "leftouter": "left", "left_outer": "left",
    "right": "right", "rightouter": "right", "right_outer": "right",
    "full": "full", "outer": "full", "fullouter": "full", "full_outer": "full",
    "semi": "left_semi", "leftsemi": "left_semi", "left_semi": "left_semi",
    "anti": "left_anti", "leftanti": "left_anti", "left_anti": "left_anti",
}


@dataclass(frozen=True)
class JoinDecision:
    """What :func:`plan_salted_join` chose, for logs, tests and the benchmark.

    ``salted`` is True when the skew handling ran (``strategy`` salt or broadcast)."""

    salted: bool
    side: str | None
    salts: Mapping[Any, int]
    reasons: tuple[str, ...] = ()
    strategy: str = "plain"  # plain | salt | broadcast


def row_hash(df: DataFrame) -> Column:
    """xxhash64 of every hashable column: deterministic per row content."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    cols = [F.col(f"`{f.name}`") for f in df.schema.fields if not isinstance(f.dataType, MapType)]
    return F.xxhash64(*cols) if cols else F.lit(0).cast("long")


def _bucket(h: Column, n: Column | int) -> Column:
    from pyspark.sql import functions as F

    return F.pmod(h, n if not isinstance(n, int) else F.lit(n)).cast("int")


def _salt_rows(
    df: DataFrame, cols: Sequence[str], values: Mapping[Any, list[int]], nulls: int
) -> DataFrame:
    """Salt of a row: one of its key's salt values, picked by the hash of the row."""
    from pyspark.sql import functions as F

    arrays = key_lookup(cols, {k: F.array(*map(F.lit, v)) for k, v in values.items()})
    h = row_hash(df)
    salt = (
        F.when(arrays.isNotNull(), F.element_at(arrays, _bucket(h, F.size(arrays)) + 1))
        .when(key_is_null(cols), _bucket(h, nulls))
        .otherwise(F.lit(0))
    )
    return df.withColumn(SALT, salt.cast("int"))


def _replicate_rows(
    df: DataFrame, cols: Sequence[str], values: Mapping[Any, list[int]], nulls: int
) -> DataFrame:
    """One copy of a row per salt value of its key (NULL keys: one copy, hashed)."""
    from pyspark.sql import functions as F

    arrays = key_lookup(cols, {k: F.array(*map(F.lit, v)) for k, v in values.items()})
    copies = (
        F.when(arrays.isNotNull(), arrays)
        .when(key_is_null(cols), F.array(_bucket(row_hash(df), nulls)))
        .otherwise(F.array(F.lit(0)))
    )
    return df.select("*", F.explode(copies).alias(SALT))


def salt_values(
    left: DataFrame, right: DataFrame, cols: Sequence[str], salts: Mapping[Any, int],
    rows: Mapping[Any, int], partitions: int,
) -> dict[Any, list[int]]:
    """Salt values per key whose ``(key, salt)`` land on distinct shuffle partitions.

    Evaluates Spark's shuffle hash (``pmod(hash(key..., salt), partitions)``, the same
    Murmur3 as HashPartitioning) for candidate salts in one tiny query, then lets the core
    (:func:`optimizer.skew.spread_salts`) choose. Falls back to ``0..N-1`` when the two
    sides' key types differ (the join would hash a coerced type).
    """
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
        exprs.append(F.pmod(F.hash(*lits, F.col("id").cast("int")), F.lit(partitions))
                     .alias(f"p{i}"))
    got = left.sparkSession.range(n_cand).select(*exprs).collect()
    table = {k: [int(r[f"p{i}"]) for r in got] for i, k in enumerate(keys)}
    return spread_salts(table, salts, rows, partitions)


def _check_columns(df: DataFrame, what: str) -> None:
    for name in (SALT, MARK):
        if name in df.columns:
            raise UsageError(f"{what} already has a column named {name!r}")


def salted_join(
    left: DataFrame,
    right: DataFrame,
    on: str | Sequence[str],
    how: str = "inner",
    hot_keys: Iterable[Any] | None = None,
    salts: Mapping[Any, int] | int | None = None,
    **options: Any,
) -> DataFrame:
    """``left.join(right, on, how)`` with hot keys salted; see the module docstring.

    ``hot_keys``: key values (tuples for several columns); found by sampling when None.
    ``salts``: buckets per hot key (or one N for all); chosen by the core when None.
    Options: ``skewed_side`` ("left"/"right"), ``rules`` (HotKeyRules), ``partitions``,
    ``replication_budget`` (extra replicated rows allowed), ``max_salts``, ``force``
    (skip the guardrail), ``null_salts``, ``strategy`` ("auto", "salt", "broadcast"),
    ``broadcast_rows`` (most hot-key rows of the other side to broadcast).
    """
    return plan_salted_join(left, right, on, how, hot_keys, salts, **options)[0]


def plan_salted_join(
    left: DataFrame,
    right: DataFrame,
    on: str | Sequence[str],
    how: str = "inner",
    hot_keys: Iterable[Any] | None = None,
    salts: Mapping[Any, int] | int | None = None,
    *,
    skewed_side: str | None = None,
    rules: HotKeyRules = HotKeyRules(),
    partitions: int | None = None,
    replication_budget: int | None = None,
    max_salts: int = 64,
    force: bool = False,
    null_salts: int | None = None,
    strategy: str = "auto",
    broadcast_rows: int = BROADCAST_ROWS,
) -> tuple[DataFrame, JoinDecision]:
    """:func:`salted_join` returning its decision too."""
    kind = JOIN_TYPES.get(how.lower().replace(" ", "_")) if isinstance(how, str) else None
    if kind is None:
        raise UsageError(f"unsupported join type {how!r} (supported: {', '.join(JOIN_TYPES)})")
    if skewed_side not in (None, "left", "right"):
        raise UsageError(f"skewed_side must be 'left' or 'right', got {skewed_side!r}")
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r} (supported: {', '.join(STRATEGIES)})")
    if isinstance(salts, int) and salts < 1 or isinstance(salts, Mapping) and any(
        int(n) < 1 for n in salts.values()
    ):
        raise UsageError(f"salt counts must be positive, got {salts!r}")
    cols = key_columns(left, on, "left side")
    key_columns(right, cols, "right side")
    _check_columns(left, "left side")
    _check_columns(right, "right side")
    semi = kind in ("left_semi", "left_anti")
    if semi:
        if skewed_side == "right" and hot_keys is None and salts is None:
            reduced = right.select(*cols).distinct()
            return left.join(reduced, on=cols, how=kind), JoinDecision(
                False, "right", {}, ("right side reduced to distinct keys",)
            )
        skewed_side = "left"
    sides = {"left": left, "right": right}
    parts = partitions or int(left.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)

    # 1. hot keys and the side they live on
    if hot_keys is None:
        order = [skewed_side] if skewed_side else _sides_worth_checking(left, right)
        found: dict[str, Any] = {}
        for side in order:
            found[side] = detect_hot_keys(sides[side], cols, rules, method="sample")
        best = max(order, key=lambda s: sum(h.rows for h in found[s].hot))
        keys = [h.key for h in found[best].hot]
        skewed_side = skewed_side or best
    else:
        keys = [k for k in dict.fromkeys(hot_keys) if not _has_null(k)]
    if not keys:
        return _plain(left, right, cols, kind), JoinDecision(False, None, {}, ("no hot keys",))

    # 2. measure the hot keys where the plan needs numbers
    may_broadcast = strategy != "salt" and (
        skewed_side is None or _broadcastable(kind, skewed_side))
    need = (("left", "right") if salts is None or skewed_side is None or may_broadcast
            else (skewed_side,))
    counts = {s: measure_keys(sides[s], cols, keys) if s in need else ({}, 0, 0)
              for s in ("left", "right")}
    if skewed_side is None:
        skewed_side = max(("left", "right"), key=lambda s: sum(counts[s][0].values()))
    other_side = "right" if skewed_side == "left" else "left"
    s_hot, s_nulls, s_total = counts[skewed_side]
    p_hot, p_nulls, p_total = counts[other_side]
    present = [k for k in keys if s_hot.get(k, 0) > 0]  # salting an absent key gains nothing

    # 3. buckets per key, and the guardrail
    reasons: tuple[str, ...] = ()
    if salts is None:
        plan = salt_plan(
            {k: s_hot[k] for k in present}, p_hot, s_total, parts,
            replication_budget, max_salts, p_total,
        )
        chosen = {k: n for k, n in plan.salts.items() if n > 1}
        reasons = plan.reasons
        if not plan.worthwhile and not force:
            return _plain(left, right, cols, kind), JoinDecision(False, skewed_side, {}, reasons)
    elif isinstance(salts, int):
        chosen = {k: salts for k in present if salts > 1}
    else:
        chosen = {k: int(n) for k, n in salts.items() if k in present and int(n) > 1}
    if not chosen:
        return _plain(left, right, cols, kind), JoinDecision(False, skewed_side, {}, reasons)
    s_null_salts = null_salts or salt_count(s_nulls, max(1, s_total // parts), 0, None, max_salts)
    p_null_salts = null_salts or salt_count(p_nulls, max(1, p_total // parts), 0, None, max_salts)

    # 4. isolate the hot keys and broadcast their few partners, where the join type allows
    if strategy == "broadcast" and not _broadcastable(kind, skewed_side):
        raise UsageError(f"strategy 'broadcast' cannot keep the unmatched rows of a {kind} "
                         f"join's {other_side} side; use 'salt' or 'auto'")
    if strategy == "broadcast" or strategy == "auto" and _broadcastable(kind, skewed_side) and sum(
        p_hot.get(k, 0) for k in chosen
    ) <= broadcast_rows:
        return _isolate_and_broadcast(left, right, cols, kind, skewed_side, chosen), JoinDecision(
            True, skewed_side, chosen, reasons, "broadcast")

    # 5. build the salted join
    s_df = sides[skewed_side]
    p_df = sides[other_side]
    if semi:
        p_df = p_df.select(*cols).distinct()
    p_keeps_unmatched = kind == "full" or kind == other_side
    if p_keeps_unmatched:
        s_df = s_df.withColumn(MARK, _true())
    values = salt_values(left, right, cols, chosen, s_hot, parts)
    s_df = _salt_rows(s_df, cols, values, s_null_salts)
    p_df = _replicate_rows(p_df, cols, values, p_null_salts)
    salted_left, salted_right = (s_df, p_df) if skewed_side == "left" else (p_df, s_df)
    out = salted_left.join(salted_right, on=[*cols, SALT], how=kind)
    if p_keeps_unmatched:
        from pyspark.sql import functions as F

        spurious = F.col(MARK).isNull() & key_lookup(cols, chosen).isNotNull()
        out = out.filter(~spurious).drop(MARK)
    return out.drop(SALT), JoinDecision(True, skewed_side, chosen, reasons, "salt")


def _broadcastable(kind: str, skewed_side: str) -> bool:
    """Whether a broadcast hash join can build on the side that is *not* skewed."""
    if kind in ("inner", "left_semi", "left_anti"):
        return kind == "inner" or skewed_side == "left"
    return kind == skewed_side  # left join skewed left, right join skewed right


def _isolate_and_broadcast(
    left: DataFrame, right: DataFrame, cols: list[str], kind: str, skewed_side: str,
    hot: Mapping[Any, int],
) -> DataFrame:
    """Plain join of the other keys, union the hot keys' broadcast join (same schema)."""
    from pyspark.sql import functions as F

    is_hot = key_lookup(cols, {k: True for k in hot})  # NULL for NULL keys and cold keys
    cold = _plain(left.filter(is_hot.isNull()), right.filter(is_hot.isNull()), cols, kind)
    hot_left, hot_right = left.filter(is_hot.isNotNull()), right.filter(is_hot.isNotNull())
    if kind in ("left_semi", "left_anti"):
        hot_right = hot_right.select(*cols).distinct()
    if skewed_side == "left":
        hot_join = hot_left.join(F.broadcast(hot_right), on=cols, how=kind)
    else:
        hot_join = F.broadcast(hot_left).join(hot_right, on=cols, how=kind)
    return cold.union(hot_join)


def _sides_worth_checking(left: DataFrame, right: DataFrame) -> list[str]:
    """Both sides, unless the optimizer knows one is under a tenth of the other: a key of
    the small side cannot hold enough rows to matter, and counting it costs a job."""
    sizes = {"left": estimated_rows(left), "right": estimated_rows(right)}
    if sizes["left"] is not None and sizes["right"] is not None:
        if sizes["right"] * 10 <= sizes["left"]:
            return ["left"]
        if sizes["left"] * 10 <= sizes["right"]:
            return ["right"]
    return ["left", "right"]


def _true() -> Column:
    from pyspark.sql import functions as F

    return F.lit(True)


def _has_null(key: Any) -> bool:
    return key is None or (isinstance(key, tuple) and any(k is None for k in key))


def _plain(left: DataFrame, right: DataFrame, cols: list[str], kind: str) -> DataFrame:
    return left.join(right, on=cols, how=kind)


def build_command_args(
    left: str, right: str | None, on: Sequence[str], how: str, into: str,
    right_sql: str | None = None, mode: str = "create",
) -> list[str]:
    """The argument list of this job for ``spark-submit jobs/salted_join.py`` (pure)."""
    args = [left]
    args += ["--right-sql", right_sql] if right_sql else [right or ""]
    for col in on:
        args += ["--on", col]
    return [*args, "--how", how, "--into", into, "--mode", mode]


def run(spark: Any, cfg: Any, catalog: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Join, then write ``args.into`` (create: fails if it exists; replace; append)."""
    from jobs.skew_detect import stored_hot_keys
    from service.catalog import load_table, spark_table_name
    from service.config import parse_table_identifier

    parse_table_identifier(args.into, "--into table")
    load_table(catalog, args.left)
    left = spark.table(spark_table_name(cfg, args.left))
    if args.right_sql:
        right = spark.sql(args.right_sql)
        right_name = None
    else:
        load_table(catalog, args.right)
        right = spark.table(spark_table_name(cfg, args.right))
        right_name = args.right
    hot: list[Any] | None = None
    if args.reuse_reports and len(args.on) == 1:
        for name in (args.left, right_name):
            if name and hot is None:
                hot = stored_hot_keys(catalog, name, args.on[0], args.reports_namespace)
    out, decision = plan_salted_join(left, right, args.on, args.how, hot_keys=hot,
                                     skewed_side=args.skewed_side)
    target = spark_table_name(cfg, args.into)
    exists = spark.catalog.tableExists(target.replace("`", ""))
    if args.mode == "create" and exists:
        raise UsageError(f"table {args.into!r} exists (use --mode replace or append)")
    writer = out.writeTo(target)
    if args.mode == "append" and exists:
        writer.append()
    elif args.mode == "replace" and exists:
        writer.createOrReplace()
    else:
        writer.create()
    return {"into": args.into, "salted": decision.salted, "side": decision.side,
            "salts": {str(k): n for k, n in decision.salts.items()},
            "reasons": list(decision.reasons), "hot_keys_from_reports": hot is not None}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The job's arguments (what :func:`build_command_args` produces)."""
    parser = argparse.ArgumentParser(prog="salted_join", description="Salted join of two tables.")
    parser.add_argument("left")
    parser.add_argument("right", nargs="?")
    parser.add_argument("--right-sql", help="a query instead of a right table")
    parser.add_argument("--on", action="append", required=True)
    parser.add_argument("--how", default="inner", choices=sorted(JOIN_TYPES))
    parser.add_argument("--into", required=True)
    parser.add_argument("--mode", default="create", choices=["create", "replace", "append"])
    parser.add_argument("--skewed-side", choices=["left", "right"])
    parser.add_argument("--reuse-reports", action="store_true",
                        help="take hot keys from the stored skew report of the current snapshot")
    parser.add_argument("--reports-namespace", default="icefloe")
    parser.add_argument("--config")
    args = parser.parse_args(argv)
    if bool(args.right) == bool(args.right_sql):
        parser.error("give either RIGHT or --right-sql")
    return args


def main(argv: list[str] | None = None) -> int:
    """``spark-submit jobs/salted_join.py LEFT RIGHT --on COL --how HOW --into OUT``."""
    import json

    from jobs.session import build_spark
    from service.catalog import load_catalog
    from service.config import load_config
    from service.errors import IcefloeError

    args = parse_args(argv)
    try:
        cfg = load_config(args.config)
        catalog = load_catalog(cfg)
        spark = build_spark(cfg, app_name="icefloe-salted-join")
        result = run(spark, cfg, catalog, args)
    except IcefloeError as e:
        print(f"salted_join: error: {e}", file=sys.stderr)
        return e.exit_code
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
