"""Commit events: a Redis Stream that writers (or ``icefloe notify``) append to after a commit.

Why a stream with a consumer group rather than a list or pub/sub: an event read with
XREADGROUP stays in the group's pending entries list until it is XACKed, and the decider
acks only *after* the table was brought up to date. A decider that dies mid-way leaves its
events pending; the next one takes them over with XAUTOCLAIM once they have been idle for
``claim_idle_ms``. So an event is never lost, at the price of being processed at least once,
which is harmless: applying a snapshot twice changes nothing (see ``service.rolling``).

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from service.keys import Keys
from service.redis_client import text, translated

GROUP = "decider"
MAX_LEN = 100_000


@dataclass(frozen=True)
class CommitEvent:
    id: str
    table: str
    snapshot_id: str  # raw text; validated by the decider


class CommitEvents(Protocol):
    """Publish, read (as one consumer of the decider group), ack, and measure the lag."""

    consumer: str

    def ensure_group(self) -> None: ...

    def publish(self, table: str, snapshot_id: int | None = None) -> str:
        """Append an event; its id."""
        ...

    def read(self, count: int = 100, block_ms: int | None = None) -> list[CommitEvent]:
        """Events left pending for ``claim_idle_ms`` (a dead consumer's, or ones we could not
        process yet) first, then new ones; blocks up to ``block_ms`` only when there are
        neither. An event stays pending until acked."""
        ...

    def ack(self, ids: list[str]) -> None: ...

    def lag(self) -> int:
        """Events not yet delivered to the group plus delivered but not acked."""
        ...


class RedisEvents:
    """Commit events on a Redis Stream with the consumer group ``decider``."""

    def __init__(self, client: Any, keys: Keys, consumer: str, claim_idle_ms: int = 60_000):
        self.r = client
        self.k = keys
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms

    @translated("events ensure_group")
    def ensure_group(self) -> None:
        """Create the group (reading from the stream's start) unless it exists."""
        import redis

        try:
            self.r.xgroup_create(self.k.events, GROUP, id="0", mkstream=True)
        except redis.exceptions.ResponseError as e:
            if "BUSYGROUP" not in str(e):  # Redis's documented error code, not prose
                raise

    @translated("events publish")
    def publish(self, table: str, snapshot_id: int | None = None) -> str:
        fields = {"table": table, "snapshot_id": "" if snapshot_id is None else str(snapshot_id)}
        return text(self.r.xadd(self.k.events, fields, maxlen=MAX_LEN, approximate=True))

    @staticmethod
    def _parse(rows: Any) -> list[CommitEvent]:
        out = []
        for raw_id, fields in rows or []:
            if fields is None:  # deleted from the stream while pending
                out.append(CommitEvent(text(raw_id), "", ""))
                continue
            f = {text(k): text(v) for k, v in fields.items()}
            out.append(CommitEvent(text(raw_id), f.get("table", ""), f.get("snapshot_id", "")))
        return out

    @translated("events read")
    def read(self, count: int = 100, block_ms: int | None = None) -> list[CommitEvent]:
        import redis

        try:
            claimed = self.r.xautoclaim(
                self.k.events, GROUP, self.consumer, self.claim_idle_ms, start_id="0-0", count=count
            )
        except redis.exceptions.ResponseError as e:
            if "NOGROUP" not in str(e):  # Redis's documented error code, not prose
                raise
            self.ensure_group()  # Redis restarted empty, or the stream was deleted
            claimed = [None, []]
        events = self._parse(claimed[1])
        new = self.r.xreadgroup(
            GROUP,
            self.consumer,
            {self.k.events: ">"},
            count=count,
            block=None if events else block_ms,
        )
        return events + self._parse(new[0][1] if new else [])

    @translated("events ack")
    def ack(self, ids: list[str]) -> None:
        if ids:
            self.r.xack(self.k.events, GROUP, *ids)

    @translated("events lag")
    def lag(self) -> int:
        import redis

        try:
            groups = self.r.xinfo_groups(self.k.events)
        except redis.exceptions.ResponseError:  # no stream yet: nothing waits
            return 0
        for g in groups:
            if text(g.get("name")) == GROUP:
                return int(g.get("lag") or 0) + int(g.get("pending") or 0)
        return 0


@dataclass
class MemoryStream:
    """The shared state of :class:`MemoryEvents` (one per "Redis"): entries, the group's
    delivery cursor and its pending entries (id → consumer, last delivery time)."""

    entries: list[CommitEvent] = field(default_factory=list)
    delivered: int = 0
    pending: dict[str, tuple[str, float]] = field(default_factory=dict)
    seq: int = 0


class MemoryEvents:
    """Commit events in memory, with the stream's consumer-group semantics (never blocks)."""

    def __init__(
        self,
        stream: MemoryStream | None = None,
        consumer: str = "c",
        claim_idle_ms: int = 60_000,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stream = stream if stream is not None else MemoryStream()
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms
        self.clock = clock

    def ensure_group(self) -> None:
        return None

    def publish(self, table: str, snapshot_id: int | None = None) -> str:
        s = self.stream
        s.seq += 1
        event_id = f"{s.seq}-0"
        s.entries.append(
            CommitEvent(event_id, table, "" if snapshot_id is None else str(snapshot_id))
        )
        return event_id

    def read(self, count: int = 100, block_ms: int | None = None) -> list[CommitEvent]:
        s, now = self.stream, self.clock()
        by_id = {e.id: e for e in s.entries}
        idle = [i for i, (_, at) in s.pending.items() if (now - at) * 1000 >= self.claim_idle_ms]
        claimed = sorted(idle, key=lambda i: tuple(int(p) for p in i.split("-")))[:count]
        new = s.entries[s.delivered : s.delivered + count]
        s.delivered += len(new)
        out = [by_id.get(i, CommitEvent(i, "", "")) for i in claimed] + new
        for e in out:
            s.pending[e.id] = (self.consumer, now)
        return out

    def ack(self, ids: list[str]) -> None:
        for i in ids:
            self.stream.pending.pop(i, None)

    def lag(self) -> int:
        s = self.stream
        return len(s.entries) - s.delivered + len(s.pending)
