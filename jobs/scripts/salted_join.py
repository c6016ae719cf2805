"""``spark-submit jobs/scripts/salted_join.py ARGS... [--config PATH]``
runs ``icefloe skew join ARGS...``
(its arguments and exit codes: ``icefloe skew join --help``; see :mod:`jobs.scripts`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # spark-submit adds only jobs/scripts

from jobs.scripts import command_main  # noqa: E402

main = command_main(("skew", "join"))

if __name__ == "__main__":
    sys.exit(main())
