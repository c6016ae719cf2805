"""Commit events: a Redis Stream that writers (or ``icefloe notify``) append to after a commit.

Why a stream with a consumer group rather than a list or pub/sub: an event read with
XREADGROUP stays in the group's pending entries list until it is XACKed, and the decider
acks only *after* the table was brought up to date. A decider that dies mid-way leaves its
events pending; the next one takes them over with XAUTOCLAIM once they have been idle for
``claim_idle_ms``. So an event is never lost, at the price of being processed at least once,
which is harmless: applying a snapshot twice changes nothing (see ``service.state.rolling``).

There is one stream per decider shard (``service.base.keys.shard_of`` of the table; ``shards``
of them, ``decider.shards``): a decider reads only the streams of the shards it holds
(``service.state.shards``), so an event reaches the decider that observes its table. All streams
share one Redis Cluster slot, so one XREADGROUP blocks on all of a decider's streams.

Polling the catalog finds every commit anyway; the stream makes the decider react sooner
(it blocks on XREADGROUP instead of sleeping). Events naming malformed identifiers or tables
that are not managed are rejected by the decider, logged and acked, so one bad message can
never become a poison loop.

One Protocol, :class:`CommitEvents`, two implementations proven by one contract suite
(``tests/unit/service/test_events.py``, ``tests/redis/test_events_redis.py``):
:class:`RedisEvents` (the stream) and :class:`MemoryEvents` (for unit tests). Every Redis
call is an adapter boundary: library errors leave as :class:`ServiceUnavailable`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from service.base.config import DEFAULT_SHARDS
from service.base.keys import Keys, shard_of
from service.base.redis_client import text, translated

GROUP = "decider"
MAX_LEN = 100_000


@dataclass(frozen=True)
class CommitEvent:
    id: str
    table: str
    snapshot_id: str  # raw text; validated by the decider
    shard: int = 0  # whose stream it came from


class CommitEvents(Protocol):
    """Publish, read (as one consumer of the decider group), ack, and measure the lag."""

    consumer: str

    def ensure_group(self) -> None: ...

    def publish(self, table: str, snapshot_id: int | None = None) -> str:
        """Append an event; its id."""
        ...

    def read(
        self, count: int = 100, block_ms: int | None = None, shards: Iterable[int] | None = None
    ) -> list[CommitEvent]:
        """Events of the tables in ``shards`` (default: all): those left pending for
        ``claim_idle_ms`` (a dead consumer's, or ones we could not process yet) first, then
        new ones; blocks up to ``block_ms`` only when there are neither. An event stays
        pending until acked."""
        ...

    def ack(self, events: list[CommitEvent]) -> None: ...

    def lag(self) -> int:
        """Events not yet delivered to the group plus delivered but not acked."""
        ...


class RedisEvents:
    """Commit events on a Redis Stream with the consumer group ``decider``."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        consumer: str,
        claim_idle_ms: int = 60_000,
        shards: int = DEFAULT_SHARDS,
    ):
        self.r = client
        self.k = keys
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms
        self.shards = shards
        self._grouped: set[int] = set()  # shards whose group this process has made sure of

    @translated("events ensure_group")
    def ensure_group(self, shards: Iterable[int] | None = None) -> None:
        """Create the group of each shard's stream (reading from its start) unless it exists."""
        import redis

        for shard in range(self.shards) if shards is None else shards:
            try:
                self.r.xgroup_create(self.k.events(shard), GROUP, id="0", mkstream=True)
            except redis.exceptions.ResponseError as e:
                if "BUSYGROUP" not in str(e):  # Redis's documented error code, not prose
                    raise
            self._grouped.add(shard)

    @translated("events publish")
    def publish(self, table: str, snapshot_id: int | None = None) -> str:
        fields = {"table": table, "snapshot_id": "" if snapshot_id is None else str(snapshot_id)}
        stream = self.k.events(shard_of(table, self.shards))
        return text(self.r.xadd(stream, fields, maxlen=MAX_LEN, approximate=True))

    @staticmethod
    def _parse(shard: int, rows: Any) -> list[CommitEvent]:
        out = []
        for raw_id, fields in rows or []:
            if fields is None:  # deleted from the stream while pending
                out.append(CommitEvent(text(raw_id), "", "", shard))
                continue
            f = {text(k): text(v) for k, v in fields.items()}
            row = CommitEvent(text(raw_id), f.get("table", ""), f.get("snapshot_id", ""), shard)
            out.append(row)
        return out

    def _claim(self, shards: list[int], count: int) -> list[CommitEvent]:
        """Idle pending events of these shards (XAUTOCLAIM per stream, one round trip)."""
        pipe = self.r.pipeline(transaction=False)
        for shard in shards:
            pipe.xautoclaim(
                self.k.events(shard),
                GROUP,
                self.consumer,
                self.claim_idle_ms,
                start_id="0-0",
                count=count,
            )
        events = []
        for shard, claimed in zip(shards, pipe.execute(raise_on_error=False), strict=True):
            if isinstance(claimed, Exception):
                if "NOGROUP" not in str(claimed):  # Redis's documented error code
                    raise claimed
                self._grouped.discard(shard)  # Redis restarted empty, or stream deleted
                continue
            events += self._parse(shard, claimed[1])
        return events

    @translated("events read")
    def read(
        self, count: int = 100, block_ms: int | None = None, shards: Iterable[int] | None = None
    ) -> list[CommitEvent]:
        wanted = sorted(range(self.shards) if shards is None else shards)
        if not wanted:
            return []
        events = self._claim(wanted, count)
        missing = [s for s in wanted if s not in self._grouped]
        if missing:
            self.ensure_group(missing)
        new = self.r.xreadgroup(
            GROUP,
            self.consumer,
            {self.k.events(s): ">" for s in wanted},
            count=count,
            block=None if events else block_ms,
        )
        streams = {self.k.events(s): s for s in wanted}
        for stream, rows in new or []:
            events += self._parse(streams[text(stream)], rows)
        return events

    @translated("events ack")
    def ack(self, events: list[CommitEvent]) -> None:
        by_shard: dict[int, list[str]] = {}
        for e in events:
            by_shard.setdefault(e.shard, []).append(e.id)
        for shard, ids in by_shard.items():
            self.r.xack(self.k.events(shard), GROUP, *ids)

    @translated("events lag")
    def lag(self) -> int:
        """Summed over every shard's stream."""
        import redis

        pipe = self.r.pipeline(transaction=False)
        for shard in range(self.shards):
            pipe.xinfo_groups(self.k.events(shard))
        total = 0
        for groups in pipe.execute(raise_on_error=False):
            if isinstance(groups, redis.exceptions.ResponseError):
                continue  # no stream yet: nothing waits
            if isinstance(groups, Exception):
                raise groups
            for g in groups:
                if text(g.get("name")) == GROUP:
                    total += int(g.get("lag") or 0) + int(g.get("pending") or 0)
        return total


@dataclass
class MemoryStream:
    """The shared state of :class:`MemoryEvents` (one per "Redis"): entries (each tagged with
    its shard), the ids the group has delivered and its pending entries (id → consumer, last
    delivery time)."""

    entries: list[CommitEvent] = field(default_factory=list)
    delivered: set[str] = field(default_factory=set)
    pending: dict[str, tuple[str, float]] = field(default_factory=dict)
    seq: int = 0


class MemoryEvents:
    """Commit events in memory, with the streams' consumer-group semantics (never blocks)."""

    def __init__(
        self,
        stream: MemoryStream | None = None,
        consumer: str = "c",
        claim_idle_ms: int = 60_000,
        clock: Callable[[], float] = time.monotonic,
        shards: int = DEFAULT_SHARDS,
    ):
        self.stream = stream if stream is not None else MemoryStream()
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms
        self.clock = clock
        self.shards = shards

    def ensure_group(self, shards: Iterable[int] | None = None) -> None:
        return None

    def publish(self, table: str, snapshot_id: int | None = None) -> str:
        s = self.stream
        s.seq += 1
        event_id = f"{s.seq}-0"
        snap = "" if snapshot_id is None else str(snapshot_id)
        s.entries.append(CommitEvent(event_id, table, snap, shard_of(table, self.shards)))
        return event_id

    def read(
        self, count: int = 100, block_ms: int | None = None, shards: Iterable[int] | None = None
    ) -> list[CommitEvent]:
        s, now = self.stream, self.clock()
        wanted = set(range(self.shards) if shards is None else shards)
        mine = [e for e in s.entries if e.shard in wanted]
        idle = {i for i, (_, at) in s.pending.items() if (now - at) * 1000 >= self.claim_idle_ms}
        claimed = [e for e in mine if e.id in idle][:count]
        new = [e for e in mine if e.id not in s.delivered][:count]
        s.delivered.update(e.id for e in new)
        out = claimed + new
        for e in out:
            s.pending[e.id] = (self.consumer, now)
        return out

    def ack(self, events: list[CommitEvent]) -> None:
        for e in events:
            self.stream.pending.pop(e.id, None)

    def lag(self) -> int:
        s = self.stream
        return len(s.entries) - len(s.delivered) + len(s.pending)
