"""``spark-submit jobs/scripts/actor.py ARGS... [--config PATH]``
runs ``icefloe actor ARGS...``
(its arguments and exit codes: ``icefloe actor --help``; see :mod:`jobs.scripts`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # spark-submit adds only jobs/scripts

from jobs.scripts import command_main  # noqa: E402

main = command_main(("actor",))

if __name__ == "__main__":
    sys.exit(main())
