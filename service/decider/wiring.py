"""Wiring a :class:`Decider` to Redis: the one place its Redis adapters are built.

The decider itself takes adapters (:class:`icefloe.service.decider.loop.Adapters`) and knows no
Redis client; :func:`open_decider` connects (unless given a client), builds the Redis
adapters of the config's key prefix (:func:`redis_adapters`), and the cleaner the leader's
sweep calls for the files of abandoned attempts. As :func:`icefloe.service.actor.loop.run_actor`
does for an actor.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from icefloe.base.config import Config, DeciderSettings
from icefloe.base.keys import Keys
from icefloe.base.redis_client import connect
from icefloe.jobs.maintenance.orphans import cleaner
from icefloe.service.decider.loop import Adapters, Decider
from icefloe.service.decider.pool import Launcher
from icefloe.state.events.redis import RedisEvents
from icefloe.state.health.redis import RedisHealth
from icefloe.state.intents.redis import RedisIntents
from icefloe.state.layout.redis import RedisLayouts
from icefloe.state.leader.redis import RedisLeader
from icefloe.state.ledger.redis import RedisLedger
from icefloe.state.queue.redis import RedisQueue
from icefloe.state.rolling.redis import RollingStats
from icefloe.state.shards.redis import RedisShards


def redis_adapters(
    cfg: Config, client: Any, settings: DeciderSettings, consumer: str | None = None
) -> Adapters:
    """The decider's adapters on ``client``, under ``cfg``'s key prefix. ``consumer``: this
    decider's name on the event stream and its token on the leader and shard leases (by
    default a fresh ``decider-<8 hex>``)."""
    s, keys = settings, Keys.for_config(cfg)
    token = consumer or f"decider-{uuid.uuid4().hex[:8]}"
    return Adapters(
        queue=RedisQueue(client, keys, s.max_attempts, s.aging_seconds),
        stats=RollingStats(client, keys),
        events=RedisEvents(client, keys, token, s.claim_idle_ms, s.shards),
        leader=RedisLeader(client, keys, s.leader_ttl_seconds, token=token),
        shards=RedisShards(client, keys, s.shards, s.leader_ttl_seconds, token),
        health=RedisHealth(client, keys),
        intents=RedisIntents(client, keys),
        ledger=RedisLedger(client, keys),
        layouts=RedisLayouts(client, keys),
    )


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
        redis_adapters(cfg, client if client is not None else connect(cfg), s, consumer),
        s,
        launcher=launcher,
        clean=cleaner(catalog),
        clock=clock,
        sleep=sleep,
        tables=tables,
    )
