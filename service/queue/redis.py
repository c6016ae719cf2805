"""The RPQ on Redis: sorted sets and hashes, every state change one Lua script (atomic).

Every key is in the queue's one hash-tag slot (``service.keys``), so this runs unchanged on
a Redis Cluster. A script gets every key it touches through ``KEYS``: where it acts on an
item it could not name in advance (the head of the ready set, an item's table), the caller
reads that first and passes the keys, and the script re-checks, under the same slot, that
nothing changed; if something did, it changes nothing and the call reads again
(:meth:`RedisQueue._until_settled`).

Every public method is an adapter boundary: a Redis library error leaves it as
:class:`service.errors.ServiceUnavailable` (see :func:`service.redis_client.translated`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from service.errors import ServiceUnavailable
from service.keys import Keys
from service.queue import DEFAULT_AGING_SECONDS, LUA_DIR, ActionItem, InFlight, Lease
from service.redis_client import text, translated

# what a script returns when the state changed since its caller read it (it changed
# nothing): the caller reads again; e.g. another actor leased the peeked head first
RETRY = -1
MAX_TRIES = 1000


def _from_hash(raw: dict[str, str]) -> ActionItem | None:
    """An item from its Redis hash: the JSON body plus the fields the scripts maintain."""
    if "json" not in raw:
        return None
    item = ActionItem.from_json(raw["json"])
    return replace(
        item,
        enqueued_at=float(raw["enq"]),
        attempts=int(raw["attempts"]),
        last_error=raw.get("error") or None,
    )


def _pairs(flat: list[Any]) -> dict[str, str]:
    return {text(flat[i]): text(flat[i + 1]) for i in range(0, len(flat), 2)}


class RedisQueue:
    """The RPQ on Redis sorted sets; every state change is one Lua script (atomic)."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        max_attempts: int = 3,
        aging_seconds: float = DEFAULT_AGING_SECONDS,
    ):
        self.r = client
        self.k = keys
        self.max_attempts = max_attempts
        self.aging_seconds = aging_seconds
        self._lua = {
            name: client.register_script((LUA_DIR / f"{name}.lua").read_text())
            for name in ("enqueue", "dispatch", "dequeue", "ack", "renew", "release")
        }

    def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        with translated(f"queue {name}"):
            return self._lua[name](keys=keys, args=args)

    def enqueue(self, item: ActionItem, now: float, force: bool = False) -> int:
        k = self.k
        return int(
            self._run(
                "enqueue",
                [k.item(item.id), k.pending(item.table), k.tables, k.ready, k.inflight, k.dead],
                [
                    item.id,
                    item.to_json(),
                    repr(item.value_log2()),
                    item.priority,
                    repr(now),
                    repr(self.aging_seconds),
                    item.table,
                    "1" if force else "0",
                ],
            )
        )

    @translated("queue pending_tables")
    def pending_tables(self) -> dict[str, int]:
        return {text(t): int(c) for t, c in self.r.zrange(self.k.tables, 0, -1, withscores=True)}

    @translated("queue heads")
    def heads(self) -> dict[str, ActionItem]:
        tables = sorted(self.pending_tables())
        pipe = self.r.pipeline(transaction=False)
        for t in tables:
            pipe.zrevrange(self.k.pending(t), 0, 0)
        out = {}
        for t, top in zip(tables, pipe.execute(), strict=True):
            if top and (item := self.get(text(top[0]))):
                out[t] = item
        return out

    def dispatch(self, table: str) -> str | None:
        k = self.k
        got = self._run("dispatch", [k.pending(table), k.tables, k.ready, k.seq], [table])
        return None if got is None else text(got)

    def _until_settled(self, what: str, attempt: Callable[[], Any]) -> Any:
        """Run ``attempt`` (a read, then a script that re-checks it) until it is not RETRY."""
        for _ in range(MAX_TRIES):
            got = attempt()
            if not (isinstance(got, int) and got == RETRY):
                return got
        raise ServiceUnavailable(f"queue {what}: the state kept changing ({MAX_TRIES} tries)")

    def dequeue(self, now: float, lease_seconds: float) -> Lease | None:
        token, k = uuid.uuid4().hex, self.k

        def attempt() -> Any:
            with translated("queue dequeue"):
                head = self.r.zrange(k.ready, 0, 0)
            if not head:
                return None
            item_id = text(head[0])
            return self._run(
                "dequeue",
                [k.ready, k.inflight, k.leases, k.item(item_id)],
                [repr(now), repr(lease_seconds), token, item_id],
            )

        got = self._until_settled("dequeue", attempt)
        if got is None:
            return None
        raw_id, flat = got
        item = _from_hash(_pairs(flat))
        if item is None:  # cannot happen unless someone deleted the hash by hand
            raise ServiceUnavailable(f"queue item {text(raw_id)!r} has no body")
        return Lease(item, token, now + lease_seconds)

    def _tables_of(self, item_ids: list[str]) -> list[str]:
        """Each item's table as stored in its hash ("" for an item without one)."""
        with translated("queue item tables"):
            pipe = self.r.pipeline(transaction=False)
            for item_id in item_ids:
                pipe.hget(self.k.item(item_id), "table")
            return ["" if t is None else text(t) for t in pipe.execute()]

    def ack(self, item_id: str, token: str) -> int:
        k = self.k

        def attempt() -> int:
            [table] = self._tables_of([item_id])
            return int(
                self._run(
                    "ack",
                    [k.inflight, k.leases, k.item(item_id), k.tables, k.pending(table)],
                    [item_id, token, table],
                )
            )

        return int(self._until_settled("ack", attempt))

    def renew(self, item_id: str, token: str, now: float, lease_seconds: float) -> bool:
        return bool(
            self._run(
                "renew",
                [self.k.inflight, self.k.leases],
                [item_id, token, repr(now + lease_seconds)],
            )
        )

    def _release(
        self, mode: str, item_ids: Callable[[], list[str]], now: float, error: str, token: str = ""
    ) -> dict[str, str]:
        k = self.k

        def attempt() -> Any:
            ids = item_ids()
            if not ids:
                return []
            keys = [k.inflight, k.leases, k.tables, k.dead]
            args: list[Any] = [mode, repr(now), self.max_attempts, error, token]
            for item_id, table in zip(ids, self._tables_of(ids), strict=True):
                keys += [k.item(item_id), k.pending(table)]
                args += [item_id, table]
            return self._run("release", keys, args)

        return _pairs(self._until_settled(mode, attempt))

    def nack(self, item_id: str, token: str, error: str, now: float) -> str | None:
        return self._release("nack", lambda: [item_id], now, error, token).get(item_id)

    def reap(self, now: float) -> dict[str, str]:
        """Expired leases back to pending (or dead), at most 500 per call."""

        def expired() -> list[str]:
            with translated("queue reap"):
                ids = self.r.zrangebyscore(self.k.inflight, "-inf", repr(now), start=0, num=500)
            return [text(i) for i in ids]

        return self._release("reap", expired, now, "lease expired")

    @translated("queue get")
    def get(self, item_id: str) -> ActionItem | None:
        raw = self.r.hgetall(self.k.item(item_id))
        return _from_hash({text(a): text(b) for a, b in raw.items()})

    @translated("queue depth")
    def depth(self) -> dict[str, int]:
        k = self.k
        pipe = self.r.pipeline(transaction=False)
        for t in self.pending_tables():
            pipe.zcard(k.pending(t))
        pipe.zcard(k.ready).zcard(k.inflight).zcard(k.dead)
        *pending, ready, inflight, dead = pipe.execute()
        return {"pending": sum(pending), "ready": ready, "inflight": inflight, "dead": dead}

    @translated("queue pending_by_table")
    def pending_by_table(self) -> dict[str, int]:
        tables = sorted(self.pending_tables())
        counts = [self.r.zcard(self.k.pending(t)) for t in tables]
        return {t: int(c) for t, c in zip(tables, counts, strict=True) if c}

    @translated("queue inflight")
    def inflight(self) -> list[InFlight]:
        out = []
        for raw_id, deadline in self.r.zrange(self.k.inflight, 0, -1, withscores=True):
            item_id = text(raw_id)
            item = self.get(item_id)
            leased = self.r.hget(self.k.item(item_id), "leased_at")
            if item is not None:
                out.append(InFlight(item, float(text(leased or 0)), float(deadline)))
        return out

    @translated("queue dead")
    def dead(self) -> list[ActionItem]:
        return [it for i in self.r.zrange(self.k.dead, 0, -1) if (it := self.get(text(i)))]
