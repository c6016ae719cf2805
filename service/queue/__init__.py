"""The Reliable Priority Queue (RPQ) between the decider and the actors.

Like the classic Redis reliable queue (LMOVE into a processing list), but on sorted sets so
items carry a priority, and with leases so a dead actor's item comes back by itself::

    enqueue ─▶ pending:{table} ──dispatch(table)──▶ ready ──dequeue──▶ in-flight ──ack──▶ gone
                 ▲   (score: value with aging)      (FIFO)            (lease deadline)
                 └──────────── nack / lease expired (attempts + 1) ───────┘──▶ dead letters

* ``enqueue`` is idempotent on the item id (``action:table:partition``): repeated events for
  the same work coalesce into one pending item that keeps its first enqueue time (aging).
* ``dispatch`` is the only way out of pending, and the decider's fair scheduler chooses the
  table: the queue itself knows nothing of fairness (the algorithm lives in the core).
* ``dequeue`` hands out a token; only that token can ack, nack or renew, so an actor whose
  lease expired cannot ack an item that is now someone else's. At-least-once delivery.
* an item enqueued again while in flight (its actor may have scanned before the change)
  is marked and returns to pending when acked; a nack or an expired lease retries it anyway.

Two implementations of one Protocol: :class:`RedisQueue` (each move is one Lua script from
``service/lua/``) and :class:`service.queue.memory.MemoryQueue` (a plain-Python stub for
unit tests). A contract
test suite runs against both. Every method takes ``now`` instead of reading a clock.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from service.config import Config
from service.errors import ServiceUnavailable
from service.keys import Keys

LUA_DIR = Path(__file__).resolve().parents[1] / "lua"
DEFAULT_AGING_SECONDS = 3600.0


@dataclass(frozen=True)
class ActionItem:
    """One unit of work, shared with the actors as JSON (see :meth:`to_json`)."""

    id: str
    table: str
    partition: str | None
    action: str
    priority: int
    cost_bytes: int
    benefit: float
    enqueued_at: float
    attempts: int = 0
    last_error: str | None = None
    reason: str = ""

    @staticmethod
    def make_id(table: str, partition: str | None, action: str) -> str:
        """The idempotency key: one pending item per (table, partition, action)."""
        return f"{action}:{table}:{'*' if partition is None else partition}"

    @classmethod
    def new(cls, table: str, partition: str | None, action: str, priority: int,
            cost_bytes: int, benefit: float, now: float, reason: str = "") -> ActionItem:
        return cls(cls.make_id(table, partition, action), table, partition, action, priority,
                   int(cost_bytes), float(benefit), now, reason=reason)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> ActionItem:
        return cls(**json.loads(text))

    def value_log2(self) -> float:
        """log2 of the ordering value: expected benefit per byte rewritten (higher first)."""
        per_byte = max(self.benefit, 0.0) / max(self.cost_bytes, 1)
        return math.log2(per_byte) if per_byte > 0 else -1100.0


@dataclass(frozen=True)
class Lease:
    item: ActionItem
    token: str
    deadline: float


@dataclass(frozen=True)
class InFlight:
    item: ActionItem
    leased_at: float
    deadline: float


class PriorityQueue(Protocol):
    """What the decider and the actors need from the queue (Redis or in-memory)."""

    max_attempts: int

    def enqueue(self, item: ActionItem, now: float, force: bool = False) -> int:
        """1 new, 0 coalesced into an existing item, -1 dead-lettered and not ``force``."""
        ...

    def pending_tables(self) -> dict[str, int]:
        """Tables with pending items → their priority class."""
        ...

    def heads(self) -> dict[str, ActionItem]:
        """The item ``dispatch(table)`` would move next, per table with pending items."""
        ...

    def dispatch(self, table: str) -> str | None: ...

    def dequeue(self, now: float, lease_seconds: float) -> Lease | None: ...

    def ack(self, item_id: str, token: str) -> int:
        """0 when the lease was not ours; 1 done; 2 done, but the item was enqueued again
        while in flight (its actor may have scanned too early): it is pending again."""
        ...

    def nack(self, item_id: str, token: str, error: str, now: float) -> str | None:
        """'pending' (will be retried), 'dead', or None when the lease was not ours."""
        ...

    def renew(self, item_id: str, token: str, now: float, lease_seconds: float) -> bool: ...

    def reap(self, now: float) -> dict[str, str]:
        """Return expired leases to pending (or dead); id → outcome."""
        ...

    def get(self, item_id: str) -> ActionItem | None: ...

    def depth(self) -> dict[str, int]:
        """Counts: pending, ready, inflight, dead."""
        ...

    def pending_by_table(self) -> dict[str, int]: ...

    def inflight(self) -> list[InFlight]: ...

    def dead(self) -> list[ActionItem]: ...


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _from_hash(raw: dict[str, str]) -> ActionItem | None:
    """An item from its Redis hash: the JSON body plus the fields the scripts maintain."""
    if "json" not in raw:
        return None
    item = ActionItem.from_json(raw["json"])
    return replace(item, enqueued_at=float(raw["enq"]), attempts=int(raw["attempts"]),
                   last_error=raw.get("error") or None)


class RedisQueue:
    """The RPQ on Redis sorted sets; every state change is one Lua script (atomic)."""

    def __init__(self, client: Any, keys: Keys, max_attempts: int = 3,
                 aging_seconds: float = DEFAULT_AGING_SECONDS):
        self.r = client
        self.k = keys
        self.max_attempts = max_attempts
        self.aging_seconds = aging_seconds
        self._lua = {name: client.register_script((LUA_DIR / f"{name}.lua").read_text())
                     for name in ("enqueue", "dispatch", "dequeue", "ack", "renew", "release")}

    def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        import redis

        try:
            return self._lua[name](keys=keys, args=args)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
            raise ServiceUnavailable(f"redis unreachable during queue {name}: {e}") from e

    def enqueue(self, item: ActionItem, now: float, force: bool = False) -> int:
        k = self.k
        return int(self._run(
            "enqueue",
            [k.item(item.id), k.pending(item.table), k.tables, k.ready, k.inflight, k.dead],
            [item.id, item.to_json(), repr(item.value_log2()), item.priority, repr(now),
             repr(self.aging_seconds), item.table, "1" if force else "0"],
        ))

    def pending_tables(self) -> dict[str, int]:
        return {_s(t): int(c) for t, c in self.r.zrange(self.k.tables, 0, -1, withscores=True)}

    def heads(self) -> dict[str, ActionItem]:
        tables = sorted(self.pending_tables())
        pipe = self.r.pipeline(transaction=False)
        for t in tables:
            pipe.zrevrange(self.k.pending(t), 0, 0)
        out = {}
        for t, top in zip(tables, pipe.execute(), strict=True):
            if top and (item := self.get(_s(top[0]))):
                out[t] = item
        return out

    def dispatch(self, table: str) -> str | None:
        k = self.k
        got = self._run("dispatch", [k.pending(table), k.tables, k.ready, k.seq], [table])
        return None if got is None else _s(got)

    def dequeue(self, now: float, lease_seconds: float) -> Lease | None:
        token = uuid.uuid4().hex
        got = self._run("dequeue", [self.k.ready, self.k.inflight, self.k.leases],
                        [repr(now), repr(lease_seconds), token, self.k.item_prefix])
        if got is None:
            return None
        raw_id, flat = got
        item = _from_hash({_s(flat[i]): _s(flat[i + 1]) for i in range(0, len(flat), 2)})
        if item is None:  # cannot happen unless someone deleted the hash by hand
            raise ServiceUnavailable(f"queue item {_s(raw_id)!r} has no body")
        return Lease(item, token, now + lease_seconds)

    def ack(self, item_id: str, token: str) -> int:
        k = self.k
        return int(self._run("ack", [k.inflight, k.leases, k.item(item_id), k.tables],
                             [item_id, token, k.pending_prefix]))

    def renew(self, item_id: str, token: str, now: float, lease_seconds: float) -> bool:
        return bool(self._run("renew", [self.k.inflight, self.k.leases],
                              [item_id, token, repr(now + lease_seconds)]))

    def _release(self, mode: str, now: float, error: str, item_id: str = "",
                 token: str = "") -> dict[str, str]:
        k = self.k
        flat = self._run("release", [k.inflight, k.leases, k.tables, k.dead],
                         [mode, repr(now), self.max_attempts, k.item_prefix, k.pending_prefix,
                          error, item_id, token])
        return {_s(flat[i]): _s(flat[i + 1]) for i in range(0, len(flat), 2)}

    def nack(self, item_id: str, token: str, error: str, now: float) -> str | None:
        return self._release("nack", now, error, item_id, token).get(item_id)

    def reap(self, now: float) -> dict[str, str]:
        return self._release("reap", now, "lease expired")

    def get(self, item_id: str) -> ActionItem | None:
        return _from_hash({_s(a): _s(b) for a, b in self.r.hgetall(self.k.item(item_id)).items()})

    def depth(self) -> dict[str, int]:
        k = self.k
        pipe = self.r.pipeline(transaction=False)
        for t in self.pending_tables():
            pipe.zcard(k.pending(t))
        pipe.zcard(k.ready).zcard(k.inflight).zcard(k.dead)
        *pending, ready, inflight, dead = pipe.execute()
        return {"pending": sum(pending), "ready": ready, "inflight": inflight, "dead": dead}

    def pending_by_table(self) -> dict[str, int]:
        tables = sorted(self.pending_tables())
        counts = [self.r.zcard(self.k.pending(t)) for t in tables]
        return {t: int(c) for t, c in zip(tables, counts, strict=True) if c}

    def inflight(self) -> list[InFlight]:
        out = []
        for raw_id, deadline in self.r.zrange(self.k.inflight, 0, -1, withscores=True):
            item_id = _s(raw_id)
            item = self.get(item_id)
            leased = self.r.hget(self.k.item(item_id), "leased_at")
            if item is not None:
                out.append(InFlight(item, float(_s(leased or 0)), float(deadline)))
        return out

    def dead(self) -> list[ActionItem]:
        return [it for i in self.r.zrange(self.k.dead, 0, -1) if (it := self.get(_s(i)))]


def open_queue(cfg: Config, client: Any) -> RedisQueue:
    """The queue of ``cfg`` on ``client``, with the decider's attempts and aging."""
    return RedisQueue(client, Keys.for_config(cfg), cfg.decider.max_attempts,
                      cfg.decider.aging_seconds)
