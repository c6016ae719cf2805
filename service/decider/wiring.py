"""Wiring a :class:`Decider` to Redis: its adapters (:func:`icefloe.state.open.open_state`,
connecting unless given a client) and the cleaner the leader's sweep calls for the files of
abandoned attempts. As :func:`icefloe.service.actor.loop.run_actor` does for an actor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from icefloe.base.config import Config, DeciderSettings
from icefloe.jobs.maintenance.orphans import cleaner
from icefloe.service.decider.loop import Decider
from icefloe.service.decider.pool import Launcher
from icefloe.state.open import open_state


def open_decider(
    cfg: Config,
    catalog: Any,
    client: Any = None,
    *,
    settings: DeciderSettings | None = None,
    consumer: str | None = None,
    launcher: Launcher | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    tables: Callable[[], list[str]] | None = None,
) -> Decider:
    """A decider on Redis (``client``, or a connection to ``cfg.redis``) and ``catalog``.
    ``settings``: by default ``cfg.decider``; the rest as :class:`Decider` takes them."""
    s = settings or cfg.decider
    return Decider(
        cfg,
        catalog,
        open_state(cfg, client, s, consumer),
        s,
        launcher=launcher,
        clean=cleaner(catalog),
        clock=clock,
        sleep=sleep,
        tables=tables,
    )
