"""``spark-submit jobs/scripts/skew_detect.py ARGS... [--config PATH]``
runs ``icefloe skew detect ARGS...``
(its arguments and exit codes: ``icefloe skew detect --help``; see :mod:`jobs.scripts`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # spark-submit adds only jobs/scripts

from jobs.scripts import command_main  # noqa: E402

main = command_main(("skew", "detect"))

if __name__ == "__main__":
    sys.exit(main())
