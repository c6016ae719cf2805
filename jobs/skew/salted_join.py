"""``spark-submit jobs/scripts/salted_join.py LEFT RIGHT --on COL --how HOW --into OUT``.

Joins two Iceberg tables (or a table and ``--right-sql "SELECT ..."``) with
:func:`jobs.skew.salting.salted_join`, optionally taking the hot keys from the left or right
table's stored skew report (``--reuse-reports``), and writes ``OUT``. The library lives in
:mod:`jobs.skew.salting`; its names are re-exported here for callers of the job module.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from jobs.skew.join_strategies import SALT, row_hash
from jobs.skew.salting import JOIN_TYPES, JoinDecision, plan_salted_join, salted_join
from service.errors import UsageError

__all__ = ["JOIN_TYPES", "SALT", "JoinDecision", "build_command_args", "main", "parse_args",
           "plan_salted_join", "row_hash", "run", "salted_join"]


def build_command_args(
    left: str, right: str | None, on: Sequence[str], how: str, into: str,
    right_sql: str | None = None, mode: str = "create",
) -> list[str]:
    """The argument list of this job for ``spark-submit jobs/scripts/salted_join.py`` (pure)."""
    args = [left]
    args += ["--right-sql", right_sql] if right_sql else [right or ""]
    for col in on:
        args += ["--on", col]
    return [*args, "--how", how, "--into", into, "--mode", mode]


def run(spark: Any, cfg: Any, catalog: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Join, then write ``args.into`` (create: fails if it exists; replace; append)."""
    from jobs.skew.detect import stored_hot_keys
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
    """``spark-submit jobs/scripts/salted_join.py LEFT RIGHT --on COL --how HOW --into OUT``."""
    import json

    from service.catalog import load_catalog
    from service.config import load_config
    from service.errors import IcefloeError
    from service.spark import build_spark

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

