"""Proof that a rewrite kept every row exactly once: counts, checksums, a GE suite.

Why a checksum and not only a count: a rewrite that drops one row and duplicates
another keeps the count. Each row is hashed over *all* its columns (``xxhash64``) and
the hashes are summed exactly, as two long sums of their 32-bit halves: the sum is
order-independent (files may be read in any order, rows land in any output file) and
exact (no overflow under Spark's ANSI mode below 2^31 rows, no floating point). A
duplicated row adds its hash twice, a lost one not at all, so both change the sum except
with probability ~2^-64.

The same expression runs on the staged read of the input files (deletes applied, as
Iceberg sees them), observed while the rewrite streams them into the writer (Spark's
``observe``: no extra pass over the input), and on a plain read of the new files, which
are not committed yet and therefore not visible through the table. Both sides are cast
to the input's schema first, so a reader difference (e.g. timestamp flavour) cannot fake
a mismatch.

Great Expectations is the second, independent opinion the report carries: row count
equals the input's and no column that had no nulls in the input has nulls now. It runs
once per action on the measures of that same one pass over the written data (rows and
per-column non-null counts, which the checksum's aggregation computes anyway), not on
the data again (:func:`run_suite`); GE is slow to import, so it is imported lazily, on a
background thread, once per process (:func:`prepare`).
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )
    from pyspark.sql import Column, DataFrame

KEY = "__icefloe_key"
_ROWS = "__icefloe_rows"
_HI = "__icefloe_sum_hi"
_LO = "__icefloe_sum_lo"


@dataclass(frozen=True)
class Checksum:
    """Rows, order-independent checksum and per-column non-null counts of a row set."""

    rows: int = 0
    checksum: int = 0
    non_null: dict[str, int] = field(default_factory=dict)

    def __add__(self, other: Checksum) -> Checksum:
        cols = set(self.non_null) | set(other.non_null)
        return Checksum(
            self.rows + other.rows,
            self.checksum + other.checksum,
            {c: self.non_null.get(c, 0) + other.non_null.get(c, 0) for c in cols},
        )

    def matches(self, other: Checksum) -> bool:
        return (self.rows, self.checksum) == (other.rows, other.checksum)

    def null_free_columns(self) -> list[str]:
        """Columns without a single null: the output must keep them null-free."""
        return sorted(c for c, n in self.non_null.items() if n == self.rows)


def quoted(name: str) -> str:
    """A column name as a Spark SQL identifier (backticks, inner backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _has_map(dtype: Any) -> bool:
    """Whether a Spark type is, or holds anywhere inside it, a map."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(dtype, MapType):
        return True
    if isinstance(dtype, ArrayType):
        return _has_map(dtype.elementType)
    if isinstance(dtype, StructType):
        return any(_has_map(f.dataType) for f in dtype.fields)
    return False


def _hashable(df: DataFrame, name: str) -> Column:
    """Spark cannot hash maps (nor structs/arrays holding one); their JSON form it can, and
    it is the same on both sides of a comparison."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    col = F.col(quoted(name))
    return F.to_json(col) if _has_map(df.schema[name].dataType) else col


def row_hash(df: DataFrame) -> Column:
    """xxhash64 over every column of a row but :data:`KEY`, maps included (as JSON):
    deterministic per row content. The checksums here and the salts of the skew joins
    (:mod:`icefloe.jobs.skew.join_strategies`) both use it."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    cols = [_hashable(df, c) for c in df.columns if c != KEY]
    return F.xxhash64(*cols) if cols else F.lit(0).cast("long")


def has_null(key: Any) -> bool:
    """Whether a key (a value, or a tuple of values for several columns) holds a NULL."""
    return key is None or (isinstance(key, tuple) and any(k is None for k in key))


def checksum_exprs(df: DataFrame, columns: list[str]) -> list[Column]:
    """The aggregates behind a :class:`Checksum`: rows, summed row hash, non-null counts."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    h = row_hash(df.select(*[F.col(quoted(c)) for c in columns]))
    aggs = [
        F.count(F.lit(1)).alias(_ROWS),
        # the 64-bit hash as its high (signed) and low (unsigned) 32-bit halves: each sums
        # exactly in a long for up to 2^31 rows, much faster than a DECIMAL(38,0) sum
        F.sum(F.shiftright(h, 32)).alias(_HI),
        F.sum(h.bitwiseAND(F.lit(0xFFFFFFFF))).alias(_LO),
    ]
    return aggs + [F.count(F.col(quoted(c))).alias(f"nn_{i}") for i, c in enumerate(columns)]


def checksum_of(values: Any, columns: list[str]) -> Checksum:
    """A :class:`Checksum` from a row (or dict) of :func:`checksum_exprs`' aggregates."""
    non_null = {c: int(values[f"nn_{i}"] or 0) for i, c in enumerate(columns)}
    total = (int(values[_HI] or 0) << 32) + int(values[_LO] or 0)  # = the sum of the hashes
    return Checksum(int(values[_ROWS] or 0), total, non_null)


def checksums_by_key(df: DataFrame, columns: list[str]) -> dict[str, Checksum]:
    """One Spark job: per value of the ``KEY`` column, rows + checksum + non-null counts."""
    rows = df.groupBy(KEY).agg(*checksum_exprs(df, columns)).collect()
    return {row[KEY]: checksum_of(row, columns) for row in rows}


def conform(df: DataFrame, like: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
    """``df``'s columns cast to ``like``'s schema, in ``like``'s column order (+ ``keep``)."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    return df.select(
        *[F.col(quoted(f.name)).cast(f.dataType).alias(f.name) for f in like.schema.fields],
        *[F.col(quoted(k)) for k in keep],
    )


@dataclass(frozen=True)
class SuiteResult:
    success: bool
    expectations: int
    failed: list[str]
    rows_checked: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "expectations": self.expectations,
            "failed": list(self.failed),
            "rows_checked": self.rows_checked,
        }


def profile(written: Checksum, null_free: list[str]) -> Any:
    """The written data as the suite sees it: a pandas frame of one row per column, its
    ``rows`` (the written row count), its ``nulls`` and whether the input had none
    (``null_free``). A null-free column the written data lacks counts as all nulls."""
    # pandas: only when a profile is taken
    import pandas as pd

    columns = sorted(set(written.non_null) | set(null_free))
    return pd.DataFrame(
        {
            "column": pd.Series(columns, dtype=object),
            "rows": pd.Series([written.rows] * len(columns), dtype="int64"),
            "nulls": pd.Series(
                [written.rows - written.non_null.get(c, 0) for c in columns], dtype="int64"
            ),
            "null_free": pd.Series([c in null_free for c in columns], dtype=bool),
        }
    )


def run_suite(written: Checksum, expected_rows: int, null_free: list[str]) -> SuiteResult:
    """Great Expectations over the written data's measures: the count, and no new nulls.

    ``written``: the rows and per-column non-null counts of every new file, from the one
    verification pass (the Spark engine's aggregation over the new files; the Arrow
    engine's read-back of each file it wrote); ``expected_rows`` and ``null_free``: the
    input's, observed during the rewrite. GE evaluates its two expectations on
    :func:`profile`'s frame of those measures (one row per column, in memory): every
    column's ``rows`` equals ``expected_rows``, and ``nulls`` is 0 wherever the input had
    none. The suite costs no Spark job and no read of its own, milliseconds where the
    same expectations over a Spark DataFrame of the new files cost three Spark jobs; its
    context and suite are built once per process (:func:`prepare`).
    """
    ge = prepare().result()
    frame = profile(written, null_free)
    with ge.lock:  # one context; validations are milliseconds, so they simply queue
        batch = ge.batch_definition.get_batch(batch_parameters={"dataframe": frame})
        # pass/fail per expectation is all the report needs (BOOLEAN_ONLY)
        result = batch.validate(
            ge.suite,
            result_format="BOOLEAN_ONLY",
            expectation_parameters={"expected_rows": expected_rows},
        )
    failed: list[str] = []
    for r in result.results:
        if r.success:
            continue
        config = r.expectation_config
        column = None if config is None else dict(config.kwargs).get("column")
        info = r.exception_info if isinstance(r.exception_info, dict) else {}
        named: list[str] = []
        if column == "nulls" and not info.get("raised_exception"):
            named = [f"nulls in column {c}" for c in _new_nulls(frame)]
        elif column == "rows" and not info.get("raised_exception"):
            named = [f"row count {written.rows}, expected {expected_rows}"]
        failed.extend(named or [_describe(config, info)])
    return SuiteResult(bool(result.success), len(result.results), failed, expected_rows)


def _new_nulls(frame: Any) -> list[str]:
    return [str(c) for c in frame.loc[frame["null_free"] & (frame["nulls"] != 0), "column"]]


@dataclass(frozen=True)
class _Suite:
    """This process's GE context, batch definition and suite (see :func:`prepare`)."""

    batch_definition: Any
    suite: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


_READY: Future[_Suite] | None = None
_READY_LOCK = threading.Lock()


def prepare() -> Future[_Suite]:
    """This process's GE suite, built once, on a background thread started by the first
    call: ``import great_expectations`` alone takes 4-5 s of a cold process (pandas,
    scipy, altair, SQLAlchemy), so :func:`icefloe.jobs.data.optimize.optimize_table` calls this as
    soon as it knows it will write, and the import overlaps the rewrite instead of following
    it. Every later action (a long-running actor's) reuses the same context and suite."""
    global _READY
    with _READY_LOCK:
        if _READY is None:
            future: Future[_Suite] = Future()

            def build() -> None:
                try:
                    future.set_result(_build_suite())
                except BaseException as e:  # kept for run_suite to raise
                    future.set_exception(e)

            threading.Thread(target=build, name="icefloe-expectations", daemon=True).start()
            _READY = future
        return _READY


def _build_suite() -> _Suite:
    """An ephemeral context (nothing written to disk), one pandas data source, and one
    suite of two expectations whose only per-action value, the expected row count, is a
    suite parameter."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    # great_expectations (seconds to import): only when the data checks run
    import great_expectations as gx
    from great_expectations import expectations as gxe
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas(name="icefloe_rewrite")
    asset = source.add_dataframe_asset(name="written")
    batch_definition = asset.add_batch_definition_whole_dataframe("all")
    expected: Any = {"$PARAMETER": "expected_rows"}
    between: Any = gxe.ExpectColumnValuesToBeBetween  # type: ignore[attr-defined]
    suite = gx.ExpectationSuite(name="icefloe_rewrite_suite")
    suite.add_expectation(
        between(
            column="rows",
            min_value=expected,
            max_value=expected,
            description="the written row count equals the input's",
        )
    )
    suite.add_expectation(
        between(
            column="nulls",
            min_value=0,
            max_value=0,
            row_condition="null_free==True",
            condition_parser="pandas",
            description="no nulls in a column that had none",
        )
    )
    return _Suite(batch_definition, suite)


def _describe(config: ExpectationConfiguration | None, info: dict[str, Any]) -> str:
    """``expect_column_values_to_be_between(column=rows)``, plus GE's error if it raised."""
    if config is None:
        text = "an expectation"
    else:
        kwargs = {k: v for k, v in dict(config.kwargs).items() if k in ("column", "value")}
        text = f"{config.type}({', '.join(f'{k}={v}' for k, v in sorted(kwargs.items()))})"
    if info.get("raised_exception"):
        message = str(info.get("exception_message") or "").strip().splitlines()
        text += f" raised: {message[0] if message else 'an error'}"
    return text
