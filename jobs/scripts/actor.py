"""spark-submit entry for one long-running actor:
``spark-submit jobs/scripts/actor.py [--config PATH] [--max-actions N] [--idle-exit SECONDS]``.

Thin on purpose: parse arguments, build the one SparkSession (spark-submit supplies master
and jars), and hand both to the actor loop in ``service.actor`` via ``run_actor``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # spark-submit puts jobs/ on the path, not the project root
    sys.path.insert(0, ROOT)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="jobs/scripts/actor.py")
    p.add_argument("--config", default=None)
    p.add_argument("--max-actions", type=int, default=None)
    p.add_argument("--idle-exit", type=float, default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from service.actor import run_actor
    from service.config import load_config
    from service.errors import IcefloeError
    from service.spark import build_spark

    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg = load_config(args.config)
        spark = build_spark(cfg, app_name="icefloe-actor")
        report = run_actor(cfg, args.max_actions, args.idle_exit, spark=spark)
    except IcefloeError as e:
        print(f"icefloe actor: error: {e}", file=sys.stderr)
        return e.exit_code
    print(f"actor done={report.done} failed={report.failed} lost={report.lost}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
