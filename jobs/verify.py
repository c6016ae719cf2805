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
equals the input's and no column that had no nulls in the input has nulls now. GE is
slow to import, so it is imported here lazily and run once per action.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from pyspark.sql import functions as F

    col = F.col(quoted(name))
    return F.to_json(col) if _has_map(df.schema[name].dataType) else col


def row_hash(df: DataFrame) -> Column:
    """xxhash64 over every column of a row but :data:`KEY`, maps included (as JSON):
    deterministic per row content. The checksums here and the salts of the skew joins
    (:mod:`jobs.skew.join_strategies`) both use it."""
    from pyspark.sql import functions as F

    cols = [_hashable(df, c) for c in df.columns if c != KEY]
    return F.xxhash64(*cols) if cols else F.lit(0).cast("long")


def has_null(key: Any) -> bool:
    """Whether a key (a value, or a tuple of values for several columns) holds a NULL."""
    return key is None or (isinstance(key, tuple) and any(k is None for k in key))


def checksum_exprs(df: DataFrame, columns: list[str]) -> list[Column]:
    """The aggregates behind a :class:`Checksum`: rows, summed row hash, non-null counts."""
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


def run_suite(df: DataFrame, expected_rows: int, null_free: list[str]) -> SuiteResult:
    """Great Expectations over the written data: the count, and no new nulls.

    An ephemeral context (nothing written to disk; made once per thread and session),
    one Spark data source, one suite of two expectations: the row count, and no row with
    a null in any of ``null_free`` (``UnexpectedRowsExpectation``:
    ``SELECT * FROM {batch} WHERE a IS NULL OR ...``). One filter query, not one
    ``ExpectColumnValuesToNotBeNull`` per column, because Spark pushes ``IS NULL`` down
    to the Parquet reader, whose row-group statistics hold null counts: on null-free
    files it skips every row group and reads no data, where the per-column expectations
    aggregate over every value (at 77 MB: ~0.5 s against ~1.1 s). When the query finds
    rows, one aggregation names the columns.
    """
    import great_expectations as gx
    from great_expectations import expectations as gxe

    batch_def = _batch_definition(df.sparkSession)
    # a suite of its own each run, not added to the context: nothing accumulates in it
    suite = gx.ExpectationSuite(name="icefloe_rewrite_suite")
    row_count: Any = gxe.ExpectTableRowCountToEqual  # type: ignore[attr-defined]
    suite.add_expectation(row_count(value=expected_rows))
    if null_free:
        rows_query: Any = gxe.UnexpectedRowsExpectation  # type: ignore[attr-defined]
        suite.add_expectation(
            rows_query(
                unexpected_rows_query=no_nulls_query(null_free),
                description=f"no nulls in {', '.join(null_free)}",
            )
        )
    batch = batch_def.get_batch(batch_parameters={"dataframe": df})
    # pass/fail per expectation is all the report needs; the default SUMMARY format also
    # samples unexpected values, which costs Spark jobs (about twice the suite's time)
    result = batch.validate(suite, result_format="BOOLEAN_ONLY")
    failed: list[str] = []
    for r in result.results:
        if r.success:
            continue
        config = r.expectation_config
        if config is not None and config.type == "unexpected_rows_expectation":
            named = [f"nulls in column {c}" for c in _columns_with_nulls(df, null_free)]
            if named:
                failed.extend(named)
                continue
        failed.append(_describe(config, r.exception_info))
    return SuiteResult(bool(result.success), len(result.results), failed, expected_rows)


_GE = threading.local()


def _batch_definition(session: Any) -> Any:
    """This thread's GE batch definition for a whole Spark DataFrame of ``session``, made
    once: a context, its data source and asset cost ~0.2 s to set up, and a long-running
    actor runs one suite per action. The source's batch cache holds one entry, replaced
    each run."""
    if getattr(_GE, "session", None) is not session:
        import logging
        import os

        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        context = gx.get_context(mode="ephemeral")
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        # persist=False: GE's default caches the whole DataFrame (all the written data,
        # once per action) and never releases it, which cost ~1.5 s at 77 MB and leaked
        # executor memory across a long-running actor's actions; the suite reads it once
        source = context.data_sources.add_spark(name="icefloe_rewrite", persist=False)
        asset = source.add_dataframe_asset(name="written")
        _GE.batch_def = asset.add_batch_definition_whole_dataframe("all")
        _GE.session = session
    return _GE.batch_def


def no_nulls_query(columns: list[str]) -> str:
    """GE's query for rows with a null in any of ``columns``: each name quoted for Spark
    SQL (backticks doubled) and for GE's ``str.format`` of ``{batch}`` (braces doubled)."""
    condition = " OR ".join(f"{quoted(c)} IS NULL" for c in columns)
    return "SELECT * FROM {batch} WHERE " + condition.replace("{", "{{").replace("}", "}}")


def _columns_with_nulls(df: DataFrame, columns: list[str]) -> list[str]:
    from pyspark.sql import functions as F

    counts = df.agg(
        *[
            F.count(F.lit(1)).alias("n"),
            *[F.count(F.col(quoted(c))).alias(f"nn_{i}") for i, c in enumerate(columns)],
        ]
    ).first()
    assert counts is not None
    return [c for i, c in enumerate(columns) if counts[f"nn_{i}"] < counts["n"]]


def _describe(config: Any, exception_info: Any) -> str:
    """``expect_table_row_count_to_equal(value=3)``, plus GE's error if it raised one."""
    if config is None:
        text = "an expectation"
    else:
        kwargs = {k: v for k, v in dict(config.kwargs).items() if k in ("column", "value")}
        text = f"{config.type}({', '.join(f'{k}={v}' for k, v in sorted(kwargs.items()))})"
    info = exception_info if isinstance(exception_info, dict) else {}
    if info.get("raised_exception"):
        message = str(info.get("exception_message") or "").strip().splitlines()
        text += f" raised: {message[0] if message else 'an error'}"
    return text
