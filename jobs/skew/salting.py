"""Salted joins: the plain join's exact result, with each hot key spread over N tasks.

The recipe: rows of a hot key on the *salted* side get a salt
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
takes it when it applies, salting otherwise. With the hot keys gone, the cold join may
build a hash table of the other side per task (no sort of the big side) when that side
is small per task: what makes it faster than Spark's adaptive skew split.

The guardrail (:func:`icefloe.optimizer.skew_stats.salt_plan`) runs the plain join when no key is
hot or the predicted gain is below the replication cost. Keys are given as column names
present on both sides (a USING join), so the output schema is exactly the plain one's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.base.errors import UsageError
from icefloe.jobs.base.verify import has_null
from icefloe.jobs.skew.hot_keys import (
    detect_hot_keys,
    estimated_rows,
    key_columns,
    key_lookup,
    measure_keys,
)
from icefloe.jobs.skew.join_strategies import (
    MARK,
    SALT,
    broadcastable,
    isolate_and_broadcast,
    plain_join,
    replicate_rows,
    salt_rows,
    salt_values,
)
from icefloe.optimizer.skew_stats import HotKeyRules, salt_count, salt_plan

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

STRATEGIES = ("auto", "salt", "broadcast")
BROADCAST_ROWS = 200_000  # hot-key rows of the other side that auto may broadcast
HASH_BUILD_ROWS_PER_TASK = 500_000  # other-side rows per task that a hash join may build

JOIN_TYPES = {
    "inner": "inner",
    "left": "left",
    "leftouter": "left",
    "left_outer": "left",
    "right": "right",
    "rightouter": "right",
    "right_outer": "right",
    "full": "full",
    "outer": "full",
    "fullouter": "full",
    "full_outer": "full",
    "semi": "left_semi",
    "leftsemi": "left_semi",
    "left_semi": "left_semi",
    "anti": "left_anti",
    "leftanti": "left_anti",
    "left_anti": "left_anti",
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


def check_salts(salts: Mapping[Any, int] | int | None) -> None:
    """UsageError unless every given salt count is positive."""
    if (
        isinstance(salts, int)
        and salts < 1
        or isinstance(salts, Mapping)
        and any(int(n) < 1 for n in salts.values())
    ):
        raise UsageError(f"salt counts must be positive, got {salts!r}")


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
    kind = _join_kind(how, skewed_side, strategy, salts)
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
    keys, skewed_side = _hot_keys_and_side(sides, cols, rules, skewed_side, hot_keys)
    if not keys:
        return plain_join(left, right, cols, kind), JoinDecision(False, None, {}, ("no hot keys",))

    # 2. measure the hot keys where the plan needs numbers
    counts, skewed_side = _measured(sides, cols, keys, kind, skewed_side, salts, strategy)
    other_side = "right" if skewed_side == "left" else "left"
    s_hot, s_nulls, s_total = counts[skewed_side]
    p_hot, p_nulls, p_total = counts[other_side]
    present = [k for k in keys if s_hot.get(k, 0) > 0]  # salting an absent key gains nothing

    # 3. buckets per key, and the guardrail
    chosen, reasons = _chosen_salts(
        salts,
        present,
        counts[skewed_side],
        counts[other_side],
        parts,
        replication_budget,
        max_salts,
        force,
    )
    if not chosen:
        return plain_join(left, right, cols, kind), JoinDecision(False, skewed_side, {}, reasons)

    # 4. isolate the hot keys and broadcast their few partners, where the join type allows
    partners = sum(p_hot.get(k, 0) for k in chosen)
    if _broadcasts(strategy, kind, skewed_side, partners, broadcast_rows):
        hash_build = p_total <= HASH_BUILD_ROWS_PER_TASK * parts
        out = isolate_and_broadcast(left, right, cols, kind, skewed_side, chosen, hash_build)
        return out, JoinDecision(True, skewed_side, chosen, reasons, "broadcast")

    # 5. build the salted join
    null_salts_of = (
        null_salts or salt_count(s_nulls, max(1, s_total // parts), 0, None, max_salts),
        null_salts or salt_count(p_nulls, max(1, p_total // parts), 0, None, max_salts),
    )
    out = _build_salted(sides, cols, kind, skewed_side, chosen, s_hot, parts, null_salts_of)
    return out, JoinDecision(True, skewed_side, chosen, reasons, "salt")


def _measured(
    sides: dict[str, DataFrame],
    cols: list[str],
    keys: list[Any],
    kind: str,
    skewed_side: str | None,
    salts: Mapping[Any, int] | int | None,
    strategy: str,
) -> tuple[dict[str, tuple[dict[Any, int], int, int]], str]:
    """Hot-key counts of the sides the plan needs numbers of, and the skewed side (the one
    holding more hot-key rows when the caller did not say)."""
    may_broadcast = strategy != "salt" and (skewed_side is None or broadcastable(kind, skewed_side))
    need = (
        ("left", "right")
        if salts is None or skewed_side is None or may_broadcast
        else (skewed_side,)
    )
    counts = {
        s: measure_keys(sides[s], cols, keys) if s in need else ({}, 0, 0)
        for s in ("left", "right")
    }
    if skewed_side is None:
        skewed_side = max(("left", "right"), key=lambda s: sum(counts[s][0].values()))
    return counts, skewed_side


def _broadcasts(
    strategy: str, kind: str, skewed_side: str, partners: int, broadcast_rows: int
) -> bool:
    """Whether the hot keys' partners are broadcast (isolate-and-broadcast) or salted."""
    if strategy == "broadcast" and not broadcastable(kind, skewed_side):
        other_side = "right" if skewed_side == "left" else "left"
        raise UsageError(
            f"strategy 'broadcast' cannot keep the unmatched rows of a {kind} "
            f"join's {other_side} side; use 'salt' or 'auto'"
        )
    return strategy == "broadcast" or (
        strategy == "auto" and broadcastable(kind, skewed_side) and partners <= broadcast_rows
    )


def _join_kind(
    how: str, skewed_side: str | None, strategy: str, salts: Mapping[Any, int] | int | None
) -> str:
    """The normalised join type, once the options are checked."""
    kind = JOIN_TYPES.get(how.lower().replace(" ", "_")) if isinstance(how, str) else None
    if kind is None:
        raise UsageError(f"unsupported join type {how!r} (supported: {', '.join(JOIN_TYPES)})")
    if skewed_side not in (None, "left", "right"):
        raise UsageError(f"skewed_side must be 'left' or 'right', got {skewed_side!r}")
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r} (supported: {', '.join(STRATEGIES)})")
    check_salts(salts)
    return kind


def _hot_keys_and_side(
    sides: Mapping[str, DataFrame],
    cols: list[str],
    rules: HotKeyRules,
    skewed_side: str | None,
    hot_keys: Iterable[Any] | None,
) -> tuple[list[Any], str | None]:
    """The hot keys (given, or found by sampling) and the skewed side if known by now."""
    if hot_keys is not None:
        return [k for k in dict.fromkeys(hot_keys) if not has_null(k)], skewed_side
    order = [skewed_side] if skewed_side else _sides_worth_checking(sides["left"], sides["right"])
    found = {side: detect_hot_keys(sides[side], cols, rules, method="sample") for side in order}
    best = max(order, key=lambda s: sum(h.rows for h in found[s].hot))
    return [h.key for h in found[best].hot], skewed_side or best


KeyCounts = tuple[dict[Any, int], int, int]
"""Rows per hot key, NULL-key rows and all rows of one side (:func:`measure_keys`)."""


def _chosen_salts(
    salts: Mapping[Any, int] | int | None,
    present: list[Any],
    skewed: KeyCounts,
    other: KeyCounts,
    parts: int,
    replication_budget: int | None,
    max_salts: int,
    force: bool,
) -> tuple[dict[Any, int], tuple[str, ...]]:
    """Buckets per hot key (only keys with more than one), and the reasons; nothing when
    the core's guardrail says salting is not worth it (unless ``force``)."""
    s_hot, _, s_total = skewed
    p_hot, _, p_total = other
    if salts is None:
        plan = salt_plan(
            {k: s_hot[k] for k in present},
            p_hot,
            s_total,
            parts,
            replication_budget,
            max_salts,
            p_total,
        )
        if not plan.worthwhile and not force:
            return {}, plan.reasons
        return {k: n for k, n in plan.salts.items() if n > 1}, plan.reasons
    if isinstance(salts, int):
        return {k: salts for k in present if salts > 1}, ()
    return {k: int(n) for k, n in salts.items() if k in present and int(n) > 1}, ()


def _build_salted(
    sides: Mapping[str, DataFrame],
    cols: list[str],
    kind: str,
    skewed_side: str,
    chosen: Mapping[Any, int],
    s_hot: Mapping[Any, int],
    parts: int,
    null_salts: tuple[int, int],
) -> DataFrame:
    """Salt the skewed side, replicate the other per salt, join on key and salt."""
    other_side = "right" if skewed_side == "left" else "left"
    s_df, p_df = sides[skewed_side], sides[other_side]
    if kind in ("left_semi", "left_anti"):
        p_df = p_df.select(*cols).distinct()
    p_keeps_unmatched = kind == "full" or kind == other_side
    if p_keeps_unmatched:
        s_df = s_df.withColumn(MARK, _true())
    values = salt_values(sides["left"], sides["right"], cols, chosen, s_hot, parts)
    s_df = salt_rows(s_df, cols, values, null_salts[0])
    p_df = replicate_rows(p_df, cols, values, null_salts[1])
    salted_left, salted_right = (s_df, p_df) if skewed_side == "left" else (p_df, s_df)
    out = salted_left.join(salted_right, on=[*cols, SALT], how=kind)
    if p_keeps_unmatched:
        # pyspark: only where Spark runs (the module loads without it)
        from pyspark.sql import functions as F

        spurious = F.col(MARK).isNull() & key_lookup(cols, chosen).isNotNull()
        out = out.filter(~spurious).drop(MARK)
    return out.drop(SALT)


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
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    return F.lit(True)
