"""The actor pool: how many actors the backlog wants, and how to start more.

The decider sizes the pool (:func:`desired_actors`); starting actors goes through a
:class:`Launcher`: ``spark-submit app/scripts/actor.py`` processes (argv from
``icefloe.base.submit``), or just a log line.
"""

from __future__ import annotations

import logging
import math
import subprocess
from collections.abc import Callable
from typing import Any, Protocol

from icefloe.base.config import Config
from icefloe.base.submit import submit_command_for

log = logging.getLogger("icefloe.actor")


def desired_actors(backlog: int, minimum: int, maximum: int, per_actor: int) -> int:
    """Actors wanted for ``backlog`` items: one per ``per_actor`` items, within [min, max]."""
    if per_actor < 1 or minimum < 0 or maximum < minimum:
        raise ValueError(f"bad actor bounds min={minimum} max={maximum} per_actor={per_actor}")
    return max(minimum, min(maximum, math.ceil(max(backlog, 0) / per_actor)))


class Launcher(Protocol):
    """Starts actor processes (``icefloe.base.submit`` in production; a recorder in tests)."""

    def launch(self, count: int) -> None: ...


class LogLauncher:
    """The fallback launcher: says what it would start (no ``icefloe.base.submit`` available)."""

    def launch(self, count: int) -> None:
        log.info("scale: %d more actor(s) wanted (start with `icefloe actor`)", count)


class SubmitLauncher:
    """Starts actors as ``spark-submit app/scripts/actor.py`` processes (argv from
    ``icefloe.base.submit``).

    Each actor exits after ``idle_exit`` seconds without work, so the pool shrinks by itself
    when the backlog is gone. The argv is never logged: Spark conf may carry catalog secrets.
    """

    def __init__(
        self, cfg: Config, idle_exit: float = 120.0, popen: Callable[[list[str]], Any] | None = None
    ):
        self.cfg = cfg
        self.idle_exit = idle_exit
        self.popen = popen or (lambda argv: subprocess.Popen(argv, start_new_session=True))

    def argv(self) -> list[str]:
        cmd: list[str] = submit_command_for(
            self.cfg, "actor", args=["--idle-exit", str(self.idle_exit)]
        )
        return cmd

    def launch(self, count: int) -> None:
        for _ in range(count):
            self.popen(self.argv())
        log.info("scale: launched %d actor(s) with spark-submit", count)
