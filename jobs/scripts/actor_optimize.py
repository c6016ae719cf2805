"""``spark-submit jobs/scripts/actor_optimize.py TABLE [--partition COL=VALUE ...]
[--action merge|sort] [--dry-run] [--json] [--config PATH]``: one ad-hoc optimize run
(the Airflow ad-hoc DAG's job). Thin: parse, build the session, call
``jobs.optimize.optimize_table``, print.

Exit codes as the CLI's: 0 done, 1 the operation failed, 2 bad usage or config.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script by spark-submit: make `jobs` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="actor_optimize", description=__doc__)
    parser.add_argument("table", help="namespace.table")
    parser.add_argument("--partition", action="append", default=[], metavar="COL=VALUE")
    parser.add_argument("--action", choices=("merge", "sort"), default="merge")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--config", default=None, metavar="PATH")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from jobs.optimize import optimize_table
    from service.catalog import load_catalog, load_table
    from service.config import load_config
    from service.errors import IcefloeError
    from service.spark import build_spark

    try:
        cfg = load_config(args.config)
        load_table(load_catalog(cfg), args.table)  # fail fast, before the JVM work
        spark = build_spark(cfg, app_name="icefloe-actor-optimize")
        report = optimize_table(
            spark, cfg, args.table, args.partition or None, args.action, args.dry_run
        )
    except IcefloeError as e:
        print(f"icefloe: error: {e}", file=sys.stderr)
        return e.exit_code
    data = report.to_dict()
    if args.json:
        print(json.dumps(data, sort_keys=True, default=str))
    else:
        print(
            f"{data['action']} {data['table']}: {data['partitions_rewritten']} partition(s) "
            f"rewritten, {data['files_rewritten']} file(s) -> {data['files_added']}, "
            f"snapshots {list(data['snapshot_ids'])}, {data['seconds']} s"
        )
    return 1 if data["partitions_failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
