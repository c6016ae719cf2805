"""The RPQ on Redis: sorted sets and hashes, every state change one Lua script (atomic).

Every key is in the queue's one hash-tag slot (``icefloe.base.keys``), so this runs unchanged on
a Redis Cluster. A script gets every key it touches through ``KEYS``: where it acts on an
item it could not name in advance (the head of the ready set, an item's table), the caller
reads that first and passes the keys, and the script re-checks, under the same slot, that
nothing changed; if not, the call reads again (:meth:`RedisQueue._until_settled`). Every
public method is an adapter boundary: a Redis library error leaves it as
:class:`icefloe.base.errors.ServiceUnavailable` (:func:`icefloe.base.redis_client.translated`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from icefloe.base.errors import ServiceUnavailable
from icefloe.base.keys import Keys
from icefloe.base.redis_client import LuaScripts, text, translated
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

SCRIPTS = ("enqueue", "dispatch", "dequeue", "dequeue_batch", "ack", "renew", "release")
RETRY = -1  # a script changed nothing, the state moved since its caller read: read again
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


def _lease(got: Any, token: str, deadline: float) -> Lease:
    """A lease from the dequeue script's reply ``{id, item hash fields...}``."""
    raw_id, flat = got
    item = _from_hash(_pairs(flat))
    if item is None:  # cannot happen unless someone deleted the hash by hand
        raise ServiceUnavailable(f"queue item {text(raw_id)!r} has no body")
    return Lease(item, token, deadline)


class RedisQueue(PriorityQueue):
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
        paths = [Path(__file__).with_name(f"{name}.lua") for name in SCRIPTS]  # beside it
        self._scripts = LuaScripts(client, paths, route_key=keys.ready, what="queue")

    def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        return self._scripts.run(name, keys, args)

    def _run_many(self, name: str, calls: Sequence[tuple[list[str], list[Any]]]) -> list[Any]:
        return self._scripts.run_many(name, calls)

    def _enqueue_call(
        self, item: ActionItem, now: float, force: bool
    ) -> tuple[list[str], list[Any]]:
        k = self.k
        return (
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

    def enqueue(self, item: ActionItem, now: float, force: bool = False) -> int:
        return int(self._run("enqueue", *self._enqueue_call(item, now, force)))

    def enqueue_many(
        self, items: Sequence[ActionItem], now: float, force: bool = False
    ) -> list[int]:
        calls = [self._enqueue_call(item, now, force) for item in items]
        return [int(got) for got in self._run_many("enqueue", calls)]

    @translated("queue pending_tables")
    def pending_tables(self) -> dict[str, int]:
        return {text(t): int(c) for t, c in self.r.zrange(self.k.tables, 0, -1, withscores=True)}

    @translated("queue heads")
    def heads(self) -> dict[str, ActionItem]:
        """Three round trips however many tables are pending: the tables, their heads' ids,
        the heads' hashes (the decider's fair dispatch reads this before every dispatch)."""
        tables = sorted(self.pending_tables())
        pipe = self.r.pipeline(transaction=False)
        for t in tables:
            pipe.zrevrange(self.k.pending(t), 0, 0)
        tops = {t: text(top[0]) for t, top in zip(tables, pipe.execute(), strict=True) if top}
        items = self._items(list(tops.values()))
        return {t: items[i] for t, i in tops.items() if i in items}

    def dispatch(self, table: str) -> str | None:
        k = self.k
        got = self._run("dispatch", [k.pending(table), k.tables, k.ready, k.seq], [table])
        return None if got is None else text(got)

    def dispatch_many(self, tables: Sequence[str]) -> list[str | None]:
        k = self.k
        calls = [([k.pending(t), k.tables, k.ready, k.seq], [t]) for t in tables]
        return [None if got is None else text(got) for got in self._run_many("dispatch", calls)]

    def batches(
        self, budget: Callable[[str], Budget], tables: Sequence[str] | None = None
    ) -> dict[str, list[ActionItem]]:
        """Two round trips however many tables: each table's best ids (as many as its
        budget's items), then their hashes."""
        k = self.k
        with translated("queue batches"):
            names = sorted(self.pending_tables()) if tables is None else list(tables)
            pipe = self.r.pipeline(transaction=False)
            for t in names:
                pipe.zrevrange(k.pending(t), 0, max(1, budget(t).items) - 1)
            tops = {t: [text(i) for i in ids] for t, ids in zip(names, pipe.execute(), strict=True)}
            items = self._items([i for ids in tops.values() for i in ids])
        out = {}
        for t, ids in tops.items():
            found = [items[i] for i in ids if i in items]
            if found:
                out[t] = take_batch(found, budget(t))
        return out

    def _items(self, item_ids: Sequence[str]) -> dict[str, ActionItem]:
        """The items of ``item_ids`` that exist, in one pipelined round trip."""
        if not item_ids:
            return {}
        pipe = self.r.pipeline(transaction=False)
        for item_id in item_ids:
            pipe.hgetall(self.k.item(item_id))
        out = {}
        for item_id, raw in zip(item_ids, pipe.execute(), strict=True):
            if item := _from_hash({text(a): text(b) for a, b in raw.items()}):
                out[item_id] = item
        return out

    def dequeue_batch(
        self, now: float, lease_seconds: float, budget: Callable[[str], Budget]
    ) -> list[Lease]:
        """Peek the head's id and the ids behind it (as many as the head's table's budget
        allows) and their hashes, choose the run that joins the head (:func:`take_batch`),
        then lease it in one script, all or nothing: when another actor took the head
        since the peek, the script changes nothing and the peek is repeated. Three round
        trips, however large the batch."""
        k = self.k

        def attempt() -> Any:
            with translated("queue dequeue"):
                head = self.r.zrange(k.ready, 0, 0)
                if not head:
                    return None
                first = self._items([text(head[0])])
                if not first:
                    return RETRY  # acked and gone between the two reads
                item = next(iter(first.values()))
                limit = max(1, budget(item.table).items)
                ids = [text(i) for i in self.r.zrange(k.ready, 0, limit - 1)]
                items = self._items(ids)
            chosen = take_batch([items[i] for i in ids if i in items], budget(item.table))
            if not chosen or chosen[0].id != item.id:
                return RETRY
            tokens = [uuid.uuid4().hex for _ in chosen]
            args: list[Any] = [repr(now), repr(lease_seconds)]
            for it, token in zip(chosen, tokens, strict=True):
                args += [it.id, token]
            keys = [k.ready, k.inflight, k.leases, *(k.item(it.id) for it in chosen)]
            got = self._run("dequeue_batch", keys, args)
            if got is None or (isinstance(got, int) and got == RETRY):
                return got
            by_id = dict(zip((it.id for it in chosen), tokens, strict=True))
            return [_lease(g, by_id[text(g[0])], now + lease_seconds) for g in got]

        got = self._until_settled("dequeue", attempt)
        return [] if got is None else list(got)

    def renew_many(
        self, leases: Sequence[tuple[str, str]], now: float, lease_seconds: float
    ) -> list[bool]:
        deadline = repr(now + lease_seconds)
        calls = [
            ([self.k.inflight, self.k.leases], [item_id, token, deadline])
            for item_id, token in leases
        ]
        return [bool(g) for g in self._run_many("renew", calls)] if calls else []

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
        return None if got is None else _lease(got, token, now + lease_seconds)

    def dequeue_many(self, now: float, lease_seconds: float, limit: int) -> list[Lease]:
        """Peek the ``limit`` oldest ready ids, then one dequeue script per id, pipelined:
        script ``i`` leases id ``i`` if it is then the head. Ids another actor took since
        the peek answer RETRY and the rest still line up; only when every one of them
        answers RETRY is the peek repeated."""
        k = self.k
        for _ in range(MAX_TRIES):
            with translated("queue dequeue"):
                heads = [text(h) for h in self.r.zrange(k.ready, 0, limit - 1)] if limit else []
            if not heads:
                return []
            tokens = [uuid.uuid4().hex for _ in heads]
            calls = [
                ([k.ready, k.inflight, k.leases, k.item(i)], [repr(now), repr(lease_seconds), t, i])
                for i, t in zip(heads, tokens, strict=True)
            ]
            got = self._run_many("dequeue", calls)
            leases = [
                _lease(g, t, now + lease_seconds)
                for g, t in zip(got, tokens, strict=True)
                if g is not None and not (isinstance(g, int) and g == RETRY)
            ]
            if leases or any(g is None for g in got):
                return leases
        raise ServiceUnavailable(f"queue dequeue: the state kept changing ({MAX_TRIES} tries)")

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

    def ack_many(self, leases: Sequence[tuple[str, str]]) -> list[int]:
        """The items' tables in one round trip, then the ack scripts in another; an ack
        whose table changed since (RETRY) is redone alone by :meth:`ack`."""
        k = self.k
        tables = self._tables_of([item_id for item_id, _ in leases]) if leases else []
        calls = [
            (
                [k.inflight, k.leases, k.item(item_id), k.tables, k.pending(table)],
                [item_id, token, table],
            )
            for (item_id, token), table in zip(leases, tables, strict=True)
        ]
        got = [int(g) for g in self._run_many("ack", calls)]
        return [
            self.ack(item_id, token) if g == RETRY else g
            for (item_id, token), g in zip(leases, got, strict=True)
        ]

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

        return self._release("reap", expired, now, LEASE_EXPIRED)

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
