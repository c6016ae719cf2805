"""``spark-submit app/scripts/actor.py ARGS... [--config PATH]``
runs ``icefloe actor ARGS...``
(its arguments and exit codes: ``icefloe actor --help``; see :mod:`icefloe.app.scripts`)."""

import sys

from icefloe.app.scripts import command_main  # installed: spark-submit runs this venv's Python

main = command_main(("actor",))

if __name__ == "__main__":
    sys.exit(main())
