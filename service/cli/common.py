"""What every CLI command module shares: the lazily loaded config and JSON/rich output."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from service.base.config import Config, load_config
from service.base.errors import UsageError

PIPE_WIDTH = 4096  # a file or pipe: whole lines (rich would cut them at 80 columns)


def make_console() -> Console:
    """The rich console of a command's output: a terminal's own width; to a file or a pipe,
    lines as long as they are, never cut (``tolera…``) or wrapped."""
    return Console(width=None if sys.stdout.isatty() else PIPE_WIDTH)


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


class FiniteFloat(click.FloatRange):
    """A float option within bounds that is never NaN or infinite (``FloatRange`` compares
    NaN as in range, so ``--idle-exit nan`` would never exit)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


force_option = click.option(
    "--force", is_flag=True, help="Act on TABLE even though the config does not manage it."
)


def require_managed(cfg: Config, table: str, force: bool) -> None:
    """A command that changes a table refuses one the config does not manage (a typo of a
    managed name, a table of another team) unless ``--force``."""
    if not force and not cfg.is_managed(table):
        raise UsageError(
            f"table {table!r} is not managed (managed.namespaces, managed.tables or "
            "tables.<name> in the config): add --force to act on it anyway"
        )
