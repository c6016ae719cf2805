"""Commit events on Redis Streams, one per decider shard, read by the consumer group
``decider`` (XREADGROUP, XAUTOCLAIM of idle pending entries, XACK)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from icefloe.base.config import DEFAULT_SHARDS
from icefloe.base.keys import Keys, shard_of
from icefloe.base.redis_client import text, translated
from icefloe.state.events import CommitEvent, CommitEvents

GROUP = "decider"  # the deciders' consumer group on every shard's stream
MAX_LEN = 100_000  # entries a stream keeps (approximately)


class RedisEvents(CommitEvents):
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
        # redis-py, slow to import: only when Redis is used
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
        # redis-py, slow to import: only when Redis is used
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
