"""What every CLI command module shares: the lazily loaded config and JSON/rich output."""

from __future__ import annotations

import json
import math
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from icefloe.base.config import Config, load_config
from icefloe.base.errors import UsageError


class Terminated(BaseException):
    """SIGTERM arrived where no command stops gracefully (start-up, a server's wait):
    raised by :func:`stop_on_sigterm`'s handler, it unwinds like Ctrl-C and the command
    line exits 0 with one line."""


def stop_on_sigterm() -> None:
    """SIGTERM raises :class:`Terminated` in the main thread (a loop that finishes its
    work first, ``icefloe.base.signals.on_sigterm``, takes SIGTERM over while it runs)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    signal.signal(signal.SIGTERM, handler)


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


def describe_range(
    low: float | None, high: float | None, low_open: bool = False, high_open: bool = False
) -> str:
    """A range in words, for ``--help`` and click's ``is not in the range ...`` (click's own
    reads ``x<=None`` for a range without an upper bound): ``1 or more``, ``more than 0``,
    ``at most 9``, ``1 to 65535``; nothing for no bound at all."""
    if low is None and high is None:
        return ""
    if high is None:
        return f"more than {low}" if low_open else f"{low} or more"
    if low is None:
        return f"less than {high}" if high_open else f"at most {high}"
    ends = ("(excluded)" if low_open else "", "(excluded)" if high_open else "")
    return f"{low}{' ' + ends[0] if ends[0] else ''} to {high}{' ' + ends[1] if ends[1] else ''}"


class IntRange(click.IntRange):
    """``click.IntRange`` whose ``--help`` says its bounds in words (:func:`describe_range`)."""

    name = "integer"

    def _describe_range(self) -> str:
        return describe_range(self.min, self.max, self.min_open, self.max_open)


class FiniteFloat(click.FloatRange):
    """A float option within bounds that is never NaN or infinite (``FloatRange`` compares
    NaN as in range, so ``--idle-exit nan`` would never exit)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv

    def _describe_range(self) -> str:
        return describe_range(self.min, self.max, self.min_open, self.max_open)


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


class Steps:
    """Progress through ``total`` steps of a long command: a bar on a terminal (stderr,
    so ``--json`` on stdout stays clean), one plain line per step otherwise; silent when
    ``quiet`` (``--json``). ``say`` prints a line above the bar."""

    def __init__(self, what: str, total: int, quiet: bool = False) -> None:
        self.what, self.total, self.quiet, self.done = what, total, quiet, 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Steps:
        if not self.quiet and sys.stderr.isatty():
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[label]}"),
                console=Console(stderr=True),
            )
            self._bar.start()
            self._task = self._bar.add_task(self.what, total=self.total, label="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def step(self, label: str) -> None:
        """One step done (``label``: what it was)."""
        self.done += 1
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, label=label)
        elif not self.quiet:
            click.echo(f"{self.what}: {self.done}/{self.total} {label}", err=True)

    @property
    def live(self) -> bool:
        """A bar is on the terminal: print through :meth:`say`, above it."""
        return self._bar is not None

    def say(self, text: str) -> None:
        if self._bar is not None:
            self._bar.console.print(text)
        elif not self.quiet:
            click.echo(text, err=True)
