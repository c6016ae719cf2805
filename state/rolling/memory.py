"""The in-memory stats store: the same semantics as
:class:`icefloe.state.rolling.redis.RollingStats`
(proven by one contract suite, ``tests/support/contracts/rolling.py``), for unit tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.base.partition_key import KEY_FORMAT
from icefloe.optimizer import PartitionStats
from icefloe.state.ledger import Ledger
from icefloe.state.ledger.memory import MemoryLedger
from icefloe.state.rolling import (
    STATS_FORMAT,
    PartitionDelta,
    StatsStore,
    chain_start,
    chain_stats,
    older_format,
)


class MemoryStats(StatsStore):
    """Plain dicts; one call is one step, so every method is trivially atomic. ``ledger``:
    where the store counts what it applied (a fresh :class:`MemoryLedger` by default)."""

    def __init__(self, ledger: Ledger | None = None) -> None:
        self.ledger: Ledger = ledger if ledger is not None else MemoryLedger()
        self._stats: dict[str, dict[str, PartitionStats]] = {}
        self._state: dict[str, dict[str, Any]] = {}
        self._known: set[str] = set()
        self._waiting: dict[str, dict[str, float]] = {}

    def _field(self, table: str, name: str) -> Any:
        return self._state.get(table, {}).get(name)

    def last_applied(self, table: str) -> int | None:
        return self._field(table, "last_snapshot") or None  # 0: applied an empty table

    def decided(self, table: str) -> int | None:
        return self._field(table, "decided_snapshot") or None

    def mark_decided(self, table: str, snapshot_id: int | None) -> None:
        self._state.setdefault(table, {})["decided_snapshot"] = snapshot_id or 0

    def stale(self, table: str) -> str | None:
        state = self._state.get(table)
        if not state or not state.get("last_snapshot"):  # none, or an empty table's
            return None
        return older_format(state.get("keys"), state.get("stats"))

    def target(self, table: str) -> int | None:
        value = self._field(table, "target")
        return None if value is None else int(value)

    def partitions(self, table: str) -> dict[str, PartitionStats]:
        return dict(self._stats.get(table, {}))

    def partitions_of(self, table: str, keys: Sequence[str]) -> dict[str, PartitionStats]:
        stats = self._stats.get(table, {})
        return {k: stats[k] for k in keys if k in stats}

    def mark_waiting(
        self, table: str, held: Sequence[str], released: Sequence[str], now: float
    ) -> None:
        waiting = self._waiting.setdefault(table, {})
        for key in held:
            waiting.setdefault(key, now)
        for key in released:
            waiting.pop(key, None)

    def waiting(self, table: str) -> dict[str, float]:
        return dict(self._waiting.get(table, {}))

    def apply(
        self,
        table: str,
        parent: int | None,
        snapshot_id: int,
        target: int,
        deltas: Mapping[str, PartitionDelta],
        now: float,
        earlier: Sequence[tuple[int, Mapping[str, PartitionDelta]]] = (),
    ) -> dict[str, PartitionStats] | None:
        steps = [*earlier, (snapshot_id, deltas)]
        ids = [step_id for step_id, _ in steps]
        state = self._state.get(table, {})
        formats = state.get("keys"), state.get("stats")
        start = chain_start(
            self.last_applied(table), self.target(table), parent, ids, target, *formats
        )
        if start is None:
            return None
        stats = self._stats.setdefault(table, {})
        todo = steps[start:]
        new = chain_stats(stats, target, todo)
        for key, s in new.items():
            if s.is_empty:  # as the full scan: a partition without data files is gone
                stats.pop(key, None)
            else:
                stats[key] = s
        self._state.setdefault(table, {}).update(last_snapshot=snapshot_id, applied_at=now)
        self._known.add(table)
        self.ledger.count({"snapshots_applied": len(todo)})
        return new

    def replace(
        self,
        table: str,
        snapshot_id: int | None,
        target: int,
        stats: Mapping[str, PartitionStats],
        now: float,
    ) -> None:
        self._stats[table] = dict(stats)
        state = self._state.setdefault(table, {})
        state.update(
            last_snapshot=snapshot_id or 0,
            target=target,
            applied_at=now,
            full_scans=state.get("full_scans", 0) + 1,
            keys=KEY_FORMAT,
            stats=STATS_FORMAT,
        )
        self._known.add(table)
        self.ledger.count({"full_scans": 1})

    def forget(self, table: str) -> None:
        self._stats.pop(table, None)
        self._state.pop(table, None)
        self._waiting.pop(table, None)
        self._known.discard(table)

    def known_tables(self) -> list[str]:
        return sorted(self._known)
