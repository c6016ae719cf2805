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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.errors import ServiceUnavailable
from service.keys import Keys

GROUP = "decider"
MAX_LEN = 100_000


@dataclass(frozen=True)
class CommitEvent:
    id: str
    table: str
    snapshot_id: str  # raw text; validated by the decider


def _s(raw: Any) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)


class CommitEvents:
    """Publish, read (consumer group) and ack commit events."""

    def __init__(self, client: Any, keys: Keys, consumer: str, claim_idle_ms: int = 60_000):
        self.r = client
        self.k = keys
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms

    def ensure_group(self) -> None:
        """Create the group (reading from the stream's start) unless it exists."""
        import redis

        try:
            self.r.xgroup_create(self.k.events, GROUP, id="0", mkstream=True)
        except redis.exceptions.ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise

    def publish(self, table: str, snapshot_id: int | None = None) -> str:
        fields = {"table": table, "snapshot_id": "" if snapshot_id is None else str(snapshot_id)}
        return _s(self.r.xadd(self.k.events, fields, maxlen=MAX_LEN, approximate=True))

    def _parse(self, rows: Any) -> list[CommitEvent]:
        out = []
        for raw_id, fields in rows or []:
            if fields is None:  # deleted from the stream while pending
                out.append(CommitEvent(_s(raw_id), "", ""))
                continue
            f = {_s(k): _s(v) for k, v in fields.items()}
            out.append(CommitEvent(_s(raw_id), f.get("table", ""), f.get("snapshot_id", "")))
        return out

    def read(self, count: int = 100, block_ms: int | None = None) -> list[CommitEvent]:
        """Events left pending for ``claim_idle_ms`` (a dead consumer's, or ones we could not
        process yet) plus new ones; blocks up to ``block_ms`` only when there are neither."""
        import redis

        try:
            try:
                claimed = self.r.xautoclaim(self.k.events, GROUP, self.consumer,
                                            self.claim_idle_ms, start_id="0-0", count=count)
            except redis.exceptions.ResponseError as e:
                if "NOGROUP" not in str(e):
                    raise
                self.ensure_group()  # Redis restarted empty, or the stream was deleted
                claimed = [None, []]
            events = self._parse(claimed[1])
            new = self.r.xreadgroup(GROUP, self.consumer, {self.k.events: ">"}, count=count,
                                    block=None if events else block_ms)
            return events + self._parse(new[0][1] if new else [])
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
            raise ServiceUnavailable(f"redis unreachable while reading commit events: {e}") from e

    def ack(self, ids: list[str]) -> None:
        if ids:
            self.r.xack(self.k.events, GROUP, *ids)

    def lag(self) -> int:
        """Events not yet delivered to the group plus delivered but not acked."""
        try:
            groups = self.r.xinfo_groups(self.k.events)
        except Exception:
            return 0
        for g in groups:
            if _s(g.get("name")) == GROUP:
                lag = g.get("lag")
                return int(lag or 0) + int(g.get("pending") or 0)
        return 0
