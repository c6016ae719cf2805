"""``spark-submit jobs/scripts/skew_detect.py ARGS... [--config PATH]``:
runs ``icefloe skew detect ARGS...``.

The arguments are the command's (``icefloe skew detect --help``); exit codes as the CLI's: 0 done,
1 the operation failed, 2 bad usage or config. Under spark-submit the session takes the
submit's master and jars (``service.spark.build_spark``).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # spark-submit puts jobs/scripts/ on the path, not the project root
    sys.path.insert(0, ROOT)

COMMAND = ("skew", "detect")


def main(argv: list[str] | None = None) -> int:
    from jobs.scripts import run_command

    return run_command(COMMAND, argv)


if __name__ == "__main__":
    sys.exit(main())
