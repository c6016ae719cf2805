"""``python -m service`` is the ``icefloe`` command."""

from service.cli import main

main()
