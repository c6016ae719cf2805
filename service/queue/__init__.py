"""The Reliable Priority Queue (RPQ) between the decider and the actors.

Like the classic Redis reliable queue (LMOVE into a processing list), but on sorted sets so
items carry a priority, and with leases so a dead actor's item comes back by itself::

    enqueue ─▶ pending[table]  ──dispatch(table)──▶ ready ──dequeue──▶ in-flight ──ack──▶ gone
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
* ``enqueue_many``, ``dispatch_many``, ``dequeue_many`` and ``ack_many`` do the same as
  the one-item calls, in order, for a batch: on Redis each element is still one script
  (atomic by itself), and the whole batch is one pipelined round trip (two for
  ``dequeue_many`` and ``ack_many``, which read what their scripts need first). A decider
  enqueueing a table's touched partitions, or dispatching a planned sequence of tables,
  pays one round trip instead of one per item (``bench/scale_bench.py`` measures both).

Two implementations of one Protocol: :class:`service.queue.redis.RedisQueue` (each move is
one Lua script from ``service/lua/``; re-exported here) and
:class:`service.queue.memory.MemoryQueue` (plain Python, for unit tests). One contract suite
(``tests/unit/service/test_queue.py``) runs against both.
Every method takes ``now`` instead of reading a clock.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from service.config import Config
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
    def new(
        cls,
        table: str,
        partition: str | None,
        action: str,
        priority: int,
        cost_bytes: int,
        benefit: float,
        now: float,
        reason: str = "",
        lane: str | None = None,
    ) -> ActionItem:
        """``lane``: the action whose id the item takes (default its own): a partition's
        delete compaction takes its merge's (or sort's) id, so the two coalesce into one
        item and never run at once."""
        return cls(
            cls.make_id(table, partition, lane or action),
            table,
            partition,
            action,
            priority,
            int(cost_bytes),
            float(benefit),
            now,
            reason=reason,
        )

    def to_json(self) -> str:
        # every field is a plain value, so the instance's dict is what ``asdict`` would
        # deep-copy (5x slower; the decider serializes every item it enqueues)
        return json.dumps(dict(vars(self)), sort_keys=True)

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

    # ---- batches: each element as the one-item call, in order; Redis: one round trip ----
    def enqueue_many(
        self, items: Sequence[ActionItem], now: float, force: bool = False
    ) -> list[int]:
        """:meth:`enqueue` of each item in order (a later duplicate coalesces)."""
        ...

    def dispatch_many(self, tables: Sequence[str]) -> list[str | None]:
        """:meth:`dispatch` of each table in order (a table may repeat)."""
        ...

    def dequeue_many(self, now: float, lease_seconds: float, limit: int) -> list[Lease]:
        """Up to ``limit`` leases, oldest ready first, each with its own token; fewer when
        fewer are ready (or another actor took some meanwhile), [] when none is."""
        ...

    def ack_many(self, leases: Sequence[tuple[str, str]]) -> list[int]:
        """:meth:`ack` of each ``(item id, token)`` in order."""
        ...

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


def open_queue(cfg: Config, client: Any) -> RedisQueue:
    """The queue of ``cfg`` on ``client``, with the decider's attempts and aging."""
    return RedisQueue(
        client, Keys.for_config(cfg), cfg.decider.max_attempts, cfg.decider.aging_seconds
    )


# re-exported for callers (``from service.queue import RedisQueue``); imported last because
# ``service.queue.redis`` itself needs the types above
from service.queue.redis import RedisQueue  # noqa: E402

__all__ = [
    "DEFAULT_AGING_SECONDS",
    "LUA_DIR",
    "ActionItem",
    "InFlight",
    "Lease",
    "PriorityQueue",
    "RedisQueue",
    "open_queue",
]
