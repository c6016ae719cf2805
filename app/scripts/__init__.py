"""spark-submit entry scripts: each hands its arguments to an ``icefloe`` command.

The arguments are declared once, on the click commands (``app/cli``); a script only
names its command. ``spark-submit`` (``icefloe.base.submit.build_submit_command``) passes
``--config PATH`` after the application's arguments, while the CLI takes it before the
command (a group option): :func:`cli_argv` moves it there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from icefloe.app.cli import main

CONFIG = "--config"


def cli_argv(command: Sequence[str], args: Sequence[str]) -> list[str]:
    """``icefloe`` argv for ``command`` with ``args``: every ``--config PATH`` (or
    ``--config=PATH``) among ``args`` moves in front of the command, the last one winning;
    everything after a ``--`` is left alone."""
    config: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == CONFIG and i + 1 < len(args):
            config = [CONFIG, args[i + 1]]
            i += 2
            continue
        if arg.startswith(CONFIG + "="):
            config = [CONFIG, arg[len(CONFIG) + 1 :]]
        else:
            rest.append(arg)
        i += 1
    return [*config, *command, *rest]


def run_command(command: Sequence[str], argv: Sequence[str] | None = None) -> int:
    """Run ``icefloe COMMAND ARGS...`` in this process; its exit code (0 ok, 1 failed, 2 bad
    usage or config), as the CLI maps errors to them."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        main(cli_argv(command, args))
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def command_main(command: Sequence[str]) -> Callable[..., int]:
    """A script's ``main(argv=None) -> exit code``: ``icefloe COMMAND argv...``."""

    def main(argv: Sequence[str] | None = None) -> int:
        return run_command(command, argv)

    return main
