"""``spark-submit app/scripts/salted_join.py ARGS... [--config PATH]``
runs ``icefloe skew join ARGS...``
(its arguments and exit codes: ``icefloe skew join --help``; see :mod:`icefloe.app.scripts`)."""

import sys

from icefloe.app.scripts import command_main  # installed: spark-submit runs this venv's Python

main = command_main(("skew", "join"))

if __name__ == "__main__":
    sys.exit(main())
