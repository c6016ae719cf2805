"""``python -m icefloe`` is the ``icefloe`` command."""

from icefloe.app.cli import main

main()
