"""The ``icefloe`` command line.

Exit codes: 0 ok, 1 the operation failed, 2 bad usage or config. A user mistake is one
line on stderr, never a traceback (a library error no layer translated too: its type and
first line; ``ICEFLOE_DEBUG=1`` shows its traceback). Every command that reports takes
``--json``.
"""

from __future__ import annotations

import os
import sys
import threading

import click

from icefloe.app.cli.common import Context, Terminated, stop_on_sigterm
from icefloe.base.errors import IcefloeError, describe
from icefloe.base.redact import scrub


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    envvar="ICEFLOE_CONFIG",
    metavar="PATH",
    help="Config file (default: conf/icefloe.yaml; env ICEFLOE_CONFIG).",
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """icefloe keeps an Iceberg warehouse healthy: file-size entropy, minimum-replacement
    compaction, skew detection and salted joins."""
    ctx.obj = Context(config_path)


def _register() -> None:
    """Each command module exports ``COMMANDS``; heavy imports stay inside the commands."""
    # kept here while the history command joins this list (moving it now is a merge conflict)
    from icefloe.app.cli import (
        actor,
        decide,
        demo,
        dev,
        doctor,
        history,
        maintain,
        optimize,
        pack,
        reads,
        skew,
        sql_server,
        status,
        submit,
        tables,
        ui,
    )

    modules = (
        doctor,
        tables,
        demo,
        submit,
        optimize,
        pack,
        decide,
        status,
        history,
        reads,
        actor,
        skew,
        dev,
        maintain,
        ui,
        sql_server,
    )
    for module in modules:
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Run the command line. SIGTERM stops a command cleanly (exit 0; its loop's own handler
    finishes the work under way first), Ctrl-C exits 130; either way one line, no
    traceback."""
    if threading.current_thread() is threading.main_thread():
        stop_on_sigterm()
    try:
        cli.main(args=argv, prog_name="icefloe", standalone_mode=False)
    except IcefloeError as e:
        click.echo(f"icefloe: error: {scrub(str(e))}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort as e:  # click's own for Ctrl-C (its KeyboardInterrupt)
        if isinstance(e.__cause__, KeyboardInterrupt):
            click.echo("icefloe: interrupted", err=True)
            sys.exit(130)
        click.echo("icefloe: aborted", err=True)
        sys.exit(1)
    except click.ClickException as e:
        e.show()
        sys.exit(2 if isinstance(e, click.UsageError) else e.exit_code)
    except KeyboardInterrupt:
        click.echo("icefloe: interrupted", err=True)
        sys.exit(130)
    except Terminated:
        click.echo("icefloe: stopped (SIGTERM)", err=True)
        sys.exit(0)
    except Exception as e:  # a library's error no layer translated: still one line
        if os.environ.get("ICEFLOE_DEBUG"):
            raise
        click.echo(f"icefloe: error: {describe(e)}", err=True)
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    main()
