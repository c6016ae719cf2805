"""The ``icefloe`` command line.

Exit codes: 0 ok, 1 the operation failed, 2 bad usage or config. A user mistake is one
line on stderr, never a traceback. Every command that reports takes ``--json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from service.config import Config, load_config
from service.errors import IcefloeError


class Context:
    """Lazily loaded config shared by the commands of one invocation."""

    def __init__(self, config_path: str | None) -> None:
        self.config_path = config_path
        self._cfg: Config | None = None

    @property
    def cfg(self) -> Config:
        if self._cfg is None:
            self._cfg = load_config(self.config_path)
        return self._cfg


pass_ctx = click.make_pass_decorator(Context)


def emit(data: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    """Print ``data`` as JSON or through ``render`` (a rich table, usually)."""
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        render(data)


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
    from service import cli_basic

    for command in cli_basic.COMMANDS:
        cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="icefloe", standalone_mode=False)
    except IcefloeError as e:
        click.echo(f"icefloe: error: {e}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("icefloe: aborted", err=True)
        sys.exit(1)
    except click.ClickException as e:
        e.show()
        sys.exit(2 if isinstance(e, click.UsageError) else e.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)


if __name__ == "__main__":
    main()
