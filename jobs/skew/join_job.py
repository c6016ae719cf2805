"""The salted-join job: ``icefloe skew join LEFT RIGHT --on COL --how HOW --into OUT``
(``spark-submit app/scripts/salted_join.py ...`` runs the same command).

Joins two Iceberg tables (or a table and ``--right-sql "SELECT ..."``) with
:func:`icefloe.jobs.skew.salting.salted_join`, optionally taking the hot keys from the left or right
table's stored skew report (``--reuse-reports``), and writes ``OUT``. The options are
declared once, on the click command (``app/cli/skew.py``); this module holds what the
job does (:func:`run`) and the argument list a scheduler passes (:func:`build_command_args`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.base.catalog import load_table, spark_table_name
from icefloe.base.config import parse_table_identifier
from icefloe.base.errors import UsageError
from icefloe.jobs.skew.detect import stored_hot_keys
from icefloe.jobs.skew.salting import JOIN_TYPES, plan_salted_join

if TYPE_CHECKING:
    from icefloe.base.config import Config

MODES = ("create", "replace", "append")
SUFFIXES = ("_left", "_right")
"""What a column both sides have (other than a join key) is called in the result, after its
side: pandas' ``merge(..., suffixes=("_left", "_right"))``."""


@dataclass(frozen=True)
class JoinJob:
    """One salted-join job: what ``icefloe skew join`` was given."""

    left: str
    right: str | None
    on: tuple[str, ...]
    into: str
    how: str = "inner"
    right_sql: str | None = None
    mode: str = "create"
    skewed_side: str | None = None
    reuse_reports: bool = False
    reports_namespace: str = "icefloe"

    def __post_init__(self) -> None:
        if bool(self.right) == bool(self.right_sql):
            raise UsageError("give either RIGHT or --right-sql")
        if not self.on:
            raise UsageError("give at least one --on column")
        if self.mode not in MODES:
            raise UsageError(f"bad --mode {self.mode!r}: expected one of {', '.join(MODES)}")


def build_command_args(
    left: str,
    right: str | None,
    on: Sequence[str],
    how: str,
    into: str,
    right_sql: str | None = None,
    mode: str = "create",
) -> list[str]:
    """The arguments of ``icefloe skew join`` (and ``app/scripts/salted_join.py``), pure."""
    args = [left]
    args += ["--right-sql", right_sql] if right_sql else [right or ""]
    for col in on:
        args += ["--on", col]
    return [*args, "--how", how, "--into", into, "--mode", mode]


def run(spark: Any, cfg: Config, catalog: Any, job: JoinJob) -> dict[str, Any]:
    """Join, then write ``job.into`` (create: fails if it exists; replace; append)."""
    parse_table_identifier(job.into, "--into table")
    load_table(catalog, job.left)
    left = spark.table(spark_table_name(cfg, job.left))
    right_name: str | None = None
    if job.right_sql:
        right = spark.sql(job.right_sql)
    else:
        right_name = job.right or ""
        load_table(catalog, right_name)
        right = spark.table(spark_table_name(cfg, right_name))
    hot: list[Any] | None = None
    if job.reuse_reports and len(job.on) == 1:
        for name in (job.left, right_name):
            if name and hot is None:
                hot = stored_hot_keys(catalog, name, job.on[0], job.reports_namespace)
    left, right = suffixed(left, right, job.on, job.how)
    out, decision = plan_salted_join(
        left, right, list(job.on), job.how, hot_keys=hot, skewed_side=job.skewed_side
    )
    target = spark_table_name(cfg, job.into)
    exists = spark.catalog.tableExists(target.replace("`", ""))
    if job.mode == "create" and exists:
        raise UsageError(f"table {job.into!r} exists (use --mode replace or append)")
    writer = out.writeTo(target)
    if job.mode == "append" and exists:
        writer.append()
    elif job.mode == "replace" and exists:
        writer.createOrReplace()
    else:
        writer.create()
    return {
        "into": job.into,
        "salted": decision.salted,
        "side": decision.side,
        "salts": {str(k): n for k, n in decision.salts.items()},
        "reasons": list(decision.reasons),
        "hot_keys_from_reports": hot is not None,
    }


def suffixed(left: Any, right: Any, on: Sequence[str], how: str) -> tuple[Any, Any]:
    """``left`` and ``right`` with each column both have (other than the ``on`` keys, which
    the join merges into one) renamed ``<col>_left`` and ``<col>_right`` (:data:`SUFFIXES`),
    so the result can be written (Spark refuses a table with two ``v``). A semi or anti join
    returns the left side's columns only: nothing is renamed. Names compare as Spark's do,
    case-insensitively; a suffixed name that is a column already is a UsageError."""
    if JOIN_TYPES.get(how.lower(), how) in ("left_semi", "left_anti"):
        return left, right
    keys = {c.lower() for c in on}
    right_names = {c.lower(): c for c in right.columns}
    shared = [c for c in left.columns if c.lower() in right_names and c.lower() not in keys]
    if not shared:
        return left, right
    names = {c.lower() for c in (*left.columns, *right.columns)}
    for col in shared:
        for suffix in SUFFIXES:
            if f"{col}{suffix}".lower() in names:
                raise UsageError(
                    f"both sides have column {col}, and its suffixed name {col}{suffix} is a "
                    f"column already: rename one of them (--right-sql 'SELECT ..., {col} AS "
                    "... FROM ...')"
                )
    left_suffix, right_suffix = SUFFIXES
    return (
        left.withColumnsRenamed({c: f"{c}{left_suffix}" for c in shared}),
        right.withColumnsRenamed({right_names[c.lower()]: f"{c}{right_suffix}" for c in shared}),
    )
