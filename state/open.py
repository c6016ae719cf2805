"""Every adapter of icefloe's state, built in one place: :func:`open_state` on Redis (what
the decider, the actors, ``status``, the dashboard and the CLI use), :func:`memory_state`
in memory (unit tests, in-process benches). Nothing else constructs an adapter."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from icefloe.base.config import Config, DeciderSettings
from icefloe.base.keys import Keys
from icefloe.base.redis_client import connect
from icefloe.state.events import CommitEvents
from icefloe.state.events.memory import MemoryEvents, MemoryStream
from icefloe.state.events.redis import RedisEvents
from icefloe.state.health import HealthStore
from icefloe.state.health.memory import MemoryHealth
from icefloe.state.health.redis import RedisHealth
from icefloe.state.intents import AdhocLeases
from icefloe.state.intents.redis import RedisIntents
from icefloe.state.layout import LayoutStore
from icefloe.state.layout.memory import MemoryLayouts
from icefloe.state.layout.redis import RedisLayouts
from icefloe.state.leader import Leader
from icefloe.state.leader.memory import LeaderBoard, MemoryLeader
from icefloe.state.leader.redis import RedisLeader
from icefloe.state.ledger import Ledger
from icefloe.state.ledger.memory import MemoryLedger
from icefloe.state.ledger.redis import RedisLedger
from icefloe.state.queue import PriorityQueue
from icefloe.state.queue.memory import MemoryQueue
from icefloe.state.queue.redis import RedisQueue
from icefloe.state.reads import ReadStore
from icefloe.state.reads.memory import MemoryReads
from icefloe.state.reads.redis import RedisReads
from icefloe.state.rolling import StatsStore
from icefloe.state.rolling.memory import MemoryStats
from icefloe.state.rolling.redis import RollingStats
from icefloe.state.shards import Shards
from icefloe.state.shards.memory import MemoryShards
from icefloe.state.shards.redis import RedisShards


@dataclass(frozen=True)
class State:
    """One adapter per concern. ``intents``: the records of the actors' write attempts,
    which the decider's leader sweeps (none: no sweep)."""

    queue: PriorityQueue
    stats: StatsStore
    events: CommitEvents
    leader: Leader
    shards: Shards
    health: HealthStore
    ledger: Ledger  # counters, heartbeats, the scheduler's state, the launch guard
    layouts: LayoutStore  # partitions' file bounds
    intents: AdhocLeases | None = None
    reads: ReadStore = field(default_factory=MemoryReads)  # readers' scan reports, folded


def open_state(
    cfg: Config,
    client: Any = None,
    settings: DeciderSettings | None = None,
    consumer: str | None = None,
) -> State:
    """The Redis adapters of ``cfg``'s key prefix on ``client`` (by default a connection to
    ``cfg.redis``), timed by ``settings`` (by default ``cfg.decider``). ``consumer``: the
    name on the event stream and the token on the leader and shard leases (by default a
    fresh ``decider-<8 hex>``)."""
    r = client if client is not None else connect(cfg)
    s, keys = settings or cfg.decider, Keys.for_config(cfg)
    token = consumer or f"decider-{uuid.uuid4().hex[:8]}"
    return State(
        queue=RedisQueue(r, keys, s.max_attempts, s.aging_seconds),
        stats=RollingStats(r, keys),
        events=RedisEvents(r, keys, token, s.claim_idle_ms, s.shards),
        leader=RedisLeader(r, keys, s.leader_ttl_seconds, token=token),
        shards=RedisShards(r, keys, s.shards, s.leader_ttl_seconds, token),
        health=RedisHealth(r, keys),
        ledger=RedisLedger(r, keys),
        layouts=RedisLayouts(r, keys),
        intents=RedisIntents(r, keys),
        reads=RedisReads(r, keys, token),
    )


def memory_state(
    settings: DeciderSettings | None = None,
    consumer: str = "d1",
    stream: MemoryStream | None = None,
    board: LeaderBoard | None = None,
) -> State:
    """The in-memory adapters of one decider (no intents: no sweep; its shards its own).
    Deciders that share ``stream`` and ``board`` see one another's events and leases."""
    s = settings or DeciderSettings()
    ledger = MemoryLedger()  # the stats count there too, as on Redis
    return State(
        queue=MemoryQueue(s.max_attempts, s.aging_seconds),
        stats=MemoryStats(ledger),
        events=MemoryEvents(stream or MemoryStream(), consumer, s.claim_idle_ms),
        leader=MemoryLeader(board or LeaderBoard(), s.leader_ttl_seconds, consumer),
        shards=MemoryShards(None, s.shards, s.leader_ttl_seconds, consumer),
        health=MemoryHealth(),
        ledger=ledger,
        layouts=MemoryLayouts(),
    )
