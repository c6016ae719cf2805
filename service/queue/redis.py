"""The RPQ on Redis: sorted sets and hashes, every state change one Lua script (atomic).

Every public method is an adapter boundary: a Redis library error leaves it as
:class:`service.errors.ServiceUnavailable` (see :func:`service.redis_client.translated`).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from service.errors import ServiceUnavailable
from service.keys import Keys
from service.queue import DEFAULT_AGING_SECONDS, LUA_DIR, ActionItem, InFlight, Lease
from service.redis_client import text, translated


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

    def dequeue(self, now: float, lease_seconds: float) -> Lease | None:
        token = uuid.uuid4().hex
        got = self._run(
            "dequeue",
            [self.k.ready, self.k.inflight, self.k.leases],
            [repr(now), repr(lease_seconds), token, self.k.item_prefix],
        )
        if got is None:
            return None
        raw_id, flat = got
        item = _from_hash(_pairs(flat))
        if item is None:  # cannot happen unless someone deleted the hash by hand
            raise ServiceUnavailable(f"queue item {text(raw_id)!r} has no body")
        return Lease(item, token, now + lease_seconds)

    def ack(self, item_id: str, token: str) -> int:
        k = self.k
        return int(
            self._run(
                "ack",
                [k.inflight, k.leases, k.item(item_id), k.tables],
                [item_id, token, k.pending_prefix],
            )
        )

    def renew(self, item_id: str, token: str, now: float, lease_seconds: float) -> bool:
        return bool(
            self._run(
                "renew",
                [self.k.inflight, self.k.leases],
                [item_id, token, repr(now + lease_seconds)],
            )
        )

    def _release(
        self, mode: str, now: float, error: str, item_id: str = "", token: str = ""
    ) -> dict[str, str]:
        k = self.k
        flat = self._run(
            "release",
            [k.inflight, k.leases, k.tables, k.dead],
            [
                mode,
                repr(now),
                self.max_attempts,
                k.item_prefix,
                k.pending_prefix,
                error,
                item_id,
                token,
            ],
        )
        return _pairs(flat)

    def nack(self, item_id: str, token: str, error: str, now: float) -> str | None:
        return self._release("nack", now, error, item_id, token).get(item_id)

    def reap(self, now: float) -> dict[str, str]:
        return self._release("reap", now, "lease expired")

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
