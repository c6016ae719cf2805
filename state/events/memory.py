"""Commit events in memory, for unit tests: the streams' consumer-group semantics on a
shared :class:`MemoryStream`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from icefloe.base.config import DEFAULT_SHARDS
from icefloe.base.keys import shard_of
from icefloe.state.events import CommitEvent, CommitEvents


@dataclass
class MemoryStream:
    """The shared state of :class:`MemoryEvents` (one per "Redis"): entries (each tagged with
    its shard), the ids the group has delivered and its pending entries (id → consumer, last
    delivery time)."""

    entries: list[CommitEvent] = field(default_factory=list)
    delivered: set[str] = field(default_factory=set)
    pending: dict[str, tuple[str, float]] = field(default_factory=dict)
    seq: int = 0


class MemoryEvents(CommitEvents):
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
