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
* **Batches** (issue #29): the fair dispatch moves a table's *batch* as one unit, the
  leading run of its pending items (best first) that :func:`take_batch` joins under the
  table's :class:`Budget` (items and bytes), charging the batch's bytes to the table's
  share; the items land next to each other in the ready set, and ``dequeue_batch`` leases
  the head with the run of ready items behind it that joins it under the same budget, each
  item with its own token. So an actor takes a table's batch whole, and every item is still
  acked, nacked or reaped on its own.

Two implementations of one Protocol: :class:`icefloe.state.queue.redis.RedisQueue` (each
move is one Lua script beside it; :func:`icefloe.state.open.open_state` opens a config's)
and :class:`icefloe.state.queue.memory.MemoryQueue` (plain Python, for unit tests). One
contract suite (``tests/support/contracts/queue.py``) runs against both. Every method takes
``now`` instead of reading a clock.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from icefloe.base.config import Config
from icefloe.optimizer.actions import DATA_ACTIONS

DEFAULT_AGING_SECONDS = 3600.0
LEASE_EXPIRED = "lease expired"  # the error a reaped item carries
REQUESTED = "ad-hoc request"  # the reason of an item a person queued (``icefloe request``)
BATCHED_ACTIONS = DATA_ACTIONS  # the registry's data rewrites (icefloe.optimizer.actions)


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
    # the actor's planner merges a partition with this many small files (or small files
    # that fill a target file: Iceberg's rule); 2 for one that waited ``max_wait_hours``
    # and for items queued before the field existed
    min_input_files: int = 2

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
        min_input_files: int = 2,
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
            min_input_files=min_input_files,
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
class Budget:
    """How much one batch of a table may hold: items, and bytes to rewrite (the first
    item is always taken, whatever its cost)."""

    items: int = 1
    bytes: int = 1 << 62


def budget_of(cfg: Config) -> Callable[[str], Budget]:
    """Each table's batch budget from its policy (``batch_max_items``, ``batch_max_bytes``),
    looked up once per table."""
    known: dict[str, Budget] = {}

    def budget(table: str) -> Budget:
        if table not in known:
            policy = cfg.policy_for(table)
            known[table] = Budget(policy.batch_max_items, policy.batch_max_bytes)
        return known[table]

    return budget


def solo(item: ActionItem) -> bool:
    """An item that runs alone: table-level maintenance, a whole-table item, or a retry
    after a failed attempt (a batch that failed is split, so one partition that keeps
    failing cannot hold the others back; a retry after an expired lease still batches)."""
    failed = item.attempts > 0 and item.last_error not in (None, "", LEASE_EXPIRED)
    return item.action not in BATCHED_ACTIONS or item.partition is None or failed


def take_batch(items: Sequence[ActionItem], budget: Budget) -> list[ActionItem]:
    """The leading run of ``items`` that goes into one batch with ``items[0]``: same table,
    action and ``min_input_files``, none :func:`solo`, at most ``budget.items`` of them
    and ``budget.bytes`` of cost (the first always)."""
    if not items:
        return []
    head = items[0]
    out, spent = [head], max(0, head.cost_bytes)
    if solo(head):
        return out
    for it in items[1:]:
        if len(out) >= budget.items or it.table != head.table or it.action != head.action:
            break
        if it.min_input_files != head.min_input_files:  # planned with one floor
            break
        if solo(it) or spent + max(0, it.cost_bytes) > budget.bytes:
            break
        out.append(it)
        spent += max(0, it.cost_bytes)
    return out


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

    # ---- a table's batch: dispatched as one unit, leased together -----------------------
    def batches(
        self, budget: Callable[[str], Budget], tables: Sequence[str] | None = None
    ) -> dict[str, list[ActionItem]]:
        """Per table with pending items (of ``tables``, default all): the items its next
        dispatch moves as one batch (:func:`take_batch` over its pending items, best
        first), which ``dispatch_many([table] * len(batch))`` then moves."""
        ...

    def dequeue_batch(
        self, now: float, lease_seconds: float, budget: Callable[[str], Budget]
    ) -> list[Lease]:
        """The head of the ready set and the run of ready items behind it that joins it
        (:func:`take_batch` under its table's budget), each with its own lease; [] when
        nothing is ready."""
        ...

    def renew_many(
        self, leases: Sequence[tuple[str, str]], now: float, lease_seconds: float
    ) -> list[bool]:
        """:meth:`renew` of each ``(item id, token)``, in order."""
        return [self.renew(item_id, token, now, lease_seconds) for item_id, token in leases]

    # ---- batches: each element as the one-item call, in order; Redis: one round trip ----
    def enqueue_many(
        self, items: Sequence[ActionItem], now: float, force: bool = False
    ) -> list[int]:
        """:meth:`enqueue` of each item in order (a later duplicate coalesces)."""
        return [self.enqueue(item, now, force) for item in items]

    def dispatch_many(self, tables: Sequence[str]) -> list[str | None]:
        """:meth:`dispatch` of each table in order (a table may repeat)."""
        return [self.dispatch(table) for table in tables]

    def dequeue_many(self, now: float, lease_seconds: float, limit: int) -> list[Lease]:
        """Up to ``limit`` leases, oldest ready first, each with its own token; fewer when
        fewer are ready (or another actor took some meanwhile), [] when none is."""
        out: list[Lease] = []
        while len(out) < limit and (lease := self.dequeue(now, lease_seconds)):
            out.append(lease)
        return out

    def ack_many(self, leases: Sequence[tuple[str, str]]) -> list[int]:
        """:meth:`ack` of each ``(item id, token)`` in order."""
        return [self.ack(item_id, token) for item_id, token in leases]

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


__all__ = [
    "BATCHED_ACTIONS",
    "DEFAULT_AGING_SECONDS",
    "LEASE_EXPIRED",
    "REQUESTED",
    "Budget",
    "budget_of",
    "ActionItem",
    "InFlight",
    "Lease",
    "PriorityQueue",
    "solo",
    "take_batch",
]
