"""The in-memory queue: the same semantics as the Lua scripts, for unit tests.

``tests/unit/state/test_queue.py`` runs one contract suite against this and, in
``tests/redis/``, against :class:`icefloe.state.queue.redis.RedisQueue`, so the two cannot drift.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from icefloe.state.queue import (
    DEFAULT_AGING_SECONDS,
    LEASE_EXPIRED,
    ActionItem,
    Budget,
    InFlight,
    Lease,
    PriorityQueue,
    take_batch,
)


def pending_score(item: ActionItem, enq: float, aging_seconds: float) -> float:
    return item.value_log2() - enq / aging_seconds


class MemoryQueue(PriorityQueue):
    def __init__(self, max_attempts: int = 3, aging_seconds: float = DEFAULT_AGING_SECONDS):
        self.max_attempts = max_attempts
        self.aging_seconds = aging_seconds
        self._items: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, dict[str, float]] = {}
        self._classes: dict[str, int] = {}
        self._ready: dict[str, int] = {}
        self._seq = 0
        self._inflight: dict[str, float] = {}
        self._leases: dict[str, str] = {}
        self._dead: dict[str, float] = {}

    def enqueue(self, item: ActionItem, now: float, force: bool = False) -> int:
        if item.id in self._dead:
            if not force:
                return -1
            del self._dead[item.id]
            self._items.pop(item.id, None)
        if item.id in self._inflight:
            flying = self._items[item.id]
            enq = flying.get("again", {}).get("enq", now)
            flying["again"] = {
                "item": item,
                "enq": enq,
                "score": pending_score(item, enq, self.aging_seconds),
            }
            return 0
        if item.id in self._ready:
            return 0
        meta = self._items.get(item.id)
        result = 0
        if meta is None:
            meta = {"enq": now, "attempts": 0, "error": ""}
            result = 1
        score = pending_score(item, meta["enq"], self.aging_seconds)
        meta.update(item=item, score=score, table=item.table, cls=item.priority)
        self._items[item.id] = meta
        self._pending.setdefault(item.table, {})[item.id] = score
        self._classes[item.table] = item.priority
        return result

    def pending_tables(self) -> dict[str, int]:
        return {t: c for t, c in self._classes.items() if self._pending.get(t)}

    def heads(self) -> dict[str, ActionItem]:
        out = {}
        for table, pending in sorted(self._pending.items()):
            if pending:
                item = self.get(max(pending, key=lambda i: (pending[i], i)))
                assert item is not None
                out[table] = item
        return out

    def dispatch(self, table: str) -> str | None:
        pending = self._pending.get(table)
        if not pending:
            self._classes.pop(table, None)
            return None
        best = max(pending, key=lambda i: (pending[i], i))
        del pending[best]
        self._seq += 1
        self._ready[best] = self._seq
        if not pending:
            self._classes.pop(table, None)
        return best

    def dequeue(self, now: float, lease_seconds: float) -> Lease | None:
        if not self._ready:
            return None
        item_id = min(self._ready, key=lambda i: self._ready[i])
        del self._ready[item_id]
        token = uuid.uuid4().hex
        deadline = now + lease_seconds
        self._inflight[item_id] = deadline
        self._leases[item_id] = token
        self._items[item_id]["leased_at"] = now
        item = self.get(item_id)
        assert item is not None
        return Lease(item, token, deadline)

    def batches(
        self, budget: Callable[[str], Budget], tables: Sequence[str] | None = None
    ) -> dict[str, list[ActionItem]]:
        out = {}
        for table in sorted(self._pending) if tables is None else tables:
            pending = self._pending.get(table) or {}
            if not pending:
                continue
            limit = max(1, budget(table).items)
            best = sorted(pending, key=lambda i: (pending[i], i), reverse=True)[:limit]
            items = [it for i in best if (it := self.get(i))]
            out[table] = take_batch(items, budget(table))
        return out

    def dequeue_batch(
        self, now: float, lease_seconds: float, budget: Callable[[str], Budget]
    ) -> list[Lease]:
        head = self.dequeue(now, lease_seconds)
        if head is None:
            return []
        b = budget(head.item.table)
        behind = sorted(self._ready, key=lambda i: self._ready[i])[: max(0, b.items - 1)]
        items = [it for i in behind if (it := self.get(i))]
        joined = take_batch([head.item, *items], b)[1:]
        out = [head]
        for it in joined:  # each is the ready head in turn (the run is contiguous)
            lease = self.dequeue(now, lease_seconds)
            assert lease is not None and lease.item.id == it.id
            out.append(lease)
        return out

    def holder(self, item_id: str) -> str | None:
        """The token holding ``item_id``'s lease (for
        :class:`icefloe.state.intents.memory.MemoryIntents`)."""
        return self._leases.get(item_id)

    def ack(self, item_id: str, token: str) -> int:
        if self._leases.get(item_id) != token:
            return 0
        del self._leases[item_id], self._inflight[item_id]
        meta = self._items[item_id]
        again = meta.pop("again", None)
        if again is None:
            del self._items[item_id]
            return 1
        meta.update(
            item=again["item"], enq=again["enq"], score=again["score"], attempts=0, error=""
        )
        meta.pop("leased_at", None)
        self._pending.setdefault(meta["table"], {})[item_id] = again["score"]
        self._classes[meta["table"]] = meta["cls"]
        return 2

    def renew(self, item_id: str, token: str, now: float, lease_seconds: float) -> bool:
        if self._leases.get(item_id) != token:
            return False
        self._inflight[item_id] = now + lease_seconds
        return True

    def _release(self, item_id: str, error: str, now: float) -> str:
        del self._inflight[item_id], self._leases[item_id]
        meta = self._items[item_id]
        meta["attempts"] += 1
        meta["error"] = error
        meta.pop("again", None)  # a retry scans afresh
        if meta["attempts"] >= self.max_attempts:
            self._dead[item_id] = now
            return "dead"
        self._pending.setdefault(meta["table"], {})[item_id] = meta["score"]
        self._classes[meta["table"]] = meta["cls"]
        return "pending"

    def nack(self, item_id: str, token: str, error: str, now: float) -> str | None:
        if self._leases.get(item_id) != token:
            return None
        return self._release(item_id, error, now)

    def reap(self, now: float) -> dict[str, str]:
        expired = sorted(i for i, d in self._inflight.items() if d <= now)
        return {i: self._release(i, LEASE_EXPIRED, now) for i in expired}

    def get(self, item_id: str) -> ActionItem | None:
        meta = self._items.get(item_id)
        if meta is None:
            return None
        item: ActionItem = meta["item"]
        return replace(
            item,
            enqueued_at=meta["enq"],
            attempts=meta["attempts"],
            last_error=meta["error"] or None,
        )

    def depth(self) -> dict[str, int]:
        return {
            "pending": sum(len(p) for p in self._pending.values()),
            "ready": len(self._ready),
            "inflight": len(self._inflight),
            "dead": len(self._dead),
        }

    def pending_by_table(self) -> dict[str, int]:
        return {t: len(p) for t, p in sorted(self._pending.items()) if p}

    def inflight(self) -> list[InFlight]:
        return [
            InFlight(it, self._items[i]["leased_at"], d)
            for i, d in sorted(self._inflight.items())
            if (it := self.get(i))
        ]

    def dead(self) -> list[ActionItem]:
        return [it for i in sorted(self._dead) if (it := self.get(i))]
