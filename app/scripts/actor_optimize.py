"""``spark-submit app/scripts/actor_optimize.py ARGS... [--config PATH]``
runs ``icefloe optimize ARGS...``
(its arguments and exit codes: ``icefloe optimize --help``; see :mod:`icefloe.app.scripts`)."""

import sys

from icefloe.app.scripts import command_main  # installed: spark-submit runs this venv's Python

main = command_main(("optimize",))

if __name__ == "__main__":
    sys.exit(main())
