"""``spark-submit app/scripts/skew_detect.py ARGS... [--config PATH]``
runs ``icefloe skew detect ARGS...``
(its arguments and exit codes: ``icefloe skew detect --help``; see :mod:`icefloe.app.scripts`)."""

import sys

from icefloe.app.scripts import command_main  # installed: spark-submit runs this venv's Python

main = command_main(("skew", "detect"))

if __name__ == "__main__":
    sys.exit(main())
