"""Readers' scan reports and read statistics in memory, for unit tests: :meth:`append`
stands in for a reader's reporter."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from icefloe.optimizer.reads import ReadStats
from icefloe.state.reads import (
    Folded,
    ReadStore,
    Resolve,
    counter_deltas,
    folded_stats,
    sort_reports,
)


class MemoryReads(ReadStore):
    def __init__(self) -> None:
        self.entries: list[tuple[str, Mapping[str, str]]] = []  # not folded yet
        self.kept: dict[str, ReadStats] = {}
        self.counts: dict[str, int] = {}
        self.seq = 0

    def append(self, fields: Mapping[str, str]) -> None:
        self.seq += 1
        self.entries.append((f"{self.seq}-0", dict(fields)))

    def drop(self, n: int) -> None:
        """A reporter dropped ``n`` reports."""
        self.counts["dropped"] = self.counts.get("dropped", 0) + n

    def fold(self, resolve: Resolve, half_life_s: float, limit: int) -> Folded:
        batch, self.entries = self.entries[:limit], self.entries[limit:]
        by_table, folded = sort_reports(batch, resolve)
        self.kept.update(folded_stats(self.kept, by_table, half_life_s))
        for k, v in counter_deltas(folded).items():
            self.counts[k] = self.counts.get(k, 0) + v
        return folded

    def stats(self, tables: Collection[str] | None = None) -> dict[str, ReadStats]:
        if tables is None:
            return dict(self.kept)
        return {t: self.kept[t] for t in tables if t in self.kept}

    def counters(self) -> dict[str, int]:
        names = ("folded", "own", "unmanaged", "malformed", "dropped")
        return {k: self.counts.get(k, 0) for k in names}

    def lag(self) -> int:
        return len(self.entries)
