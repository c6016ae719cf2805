"""Commit events: a Redis Stream that writers (or ``icefloe notify``) append to after a commit.

Why a stream with a consumer group rather than a list or pub/sub: an event read with
XREADGROUP stays in the group's pending entries list until it is XACKed, and the decider
acks only *after* the table was brought up to date. A decider that dies mid-way leaves its
events pending; the next one takes them over with XAUTOCLAIM once they have been idle for
``claim_idle_ms``. So an event is never lost, at the price of being processed at least once,
which is harmless: applying a snapshot twice changes nothing (see ``icefloe.state.rolling``).

There is one stream per decider shard (``icefloe.base.keys.shard_of`` of the table; ``shards``
of them, ``decider.shards``): a decider reads only the streams of the shards it holds
(``icefloe.state.shards``), so an event reaches the decider that observes its table. All streams
share one Redis Cluster slot, so one XREADGROUP blocks on all of a decider's streams.

Polling the catalog finds every commit anyway; the stream makes the decider react sooner
(it blocks on XREADGROUP instead of sleeping). Events naming malformed identifiers or tables
that are not managed are rejected by the decider, logged and acked, so one bad message can
never become a poison loop.

One Protocol, :class:`CommitEvents`, two implementations proven by one contract suite
(``tests/unit/state/test_events.py``, ``tests/redis/test_events_redis.py``):
:class:`icefloe.state.events.redis.RedisEvents` (the stream) and
:class:`icefloe.state.events.memory.MemoryEvents` (for unit tests). Every Redis
call is an adapter boundary: library errors leave as :class:`ServiceUnavailable`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommitEvent:
    id: str
    table: str
    snapshot_id: str  # raw text; validated by the decider
    shard: int = 0  # whose stream it came from


class CommitEvents(Protocol):
    """Publish, read (as one consumer of the decider group), ack, and measure the lag."""

    consumer: str

    def ensure_group(self, shards: Iterable[int] | None = None) -> None:
        """Make sure the group exists on the stream of each of ``shards`` (default: all),
        reading from its start; harmless when it does."""
        ...

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
