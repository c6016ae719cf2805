"""What every CLI command module shares: the lazily loaded config and JSON/rich output."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import click

from service.config import Config, load_config


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
