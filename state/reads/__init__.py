"""Readers' scan reports and each table's read statistics (:mod:`icefloe.optimizer.reads`).

Readers append their scan reports to one Redis stream (``dev.icefloe.iceberg.ReadReporter``,
icefloe's REST catalog server); a :class:`ReadStore` folds them into per-table
:class:`~icefloe.optimizer.reads.ReadStats`. :meth:`ReadStore.fold` takes up to ``limit``
reports (with those another consumer took and never finished, after ``claim_idle_ms``),
decays and adds them, and saves the statistics together with the reports' acknowledgement,
in one transaction: a crash before it leaves the reports pending, for the next fold; a
report is counted once. A report of icefloe's own rewrites (``own``), of no managed table
or malformed is acknowledged and counted apart, never folded.

On Redis (:class:`icefloe.state.reads.redis.RedisReads`) the stream, the statistics hash and
the counters share the ``{r}`` slot (:mod:`icefloe.base.keys`), so that transaction runs on
a Redis Cluster too; in memory (:class:`icefloe.state.reads.memory.MemoryReads`) the same
for unit tests. One contract suite (``tests/support/contracts/reads.py``) runs on both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from icefloe.optimizer.reads import ReadStats, ScanRecord

FORMAT = 1  # the statistics' JSON layout ("v"): another one is read as none


@dataclass
class Folded:
    """What one fold did: reports folded per table, and the ones set aside."""

    tables: dict[str, int] = field(default_factory=dict)
    own: int = 0
    unmanaged: int = 0
    malformed: int = 0

    @property
    def reports(self) -> int:
        return sum(self.tables.values()) + self.own + self.unmanaged + self.malformed


# a report's table name → the managed table it means, or None (icefloe.optimizer.reads.table_of)
Resolve = Callable[[str], "str | None"]


class ReadStore(Protocol):
    def fold(self, resolve: Resolve, half_life_s: float, limit: int) -> Folded:
        """Fold up to ``limit`` pending reports into the statistics (see the module)."""
        ...

    def stats(self, tables: Collection[str] | None = None) -> dict[str, ReadStats]:
        """Every table's statistics, or those of ``tables`` (tables never read: absent)."""
        ...

    def counters(self) -> dict[str, int]:
        """``folded``, ``own``, ``unmanaged``, ``malformed`` and ``dropped`` (by readers)."""
        ...

    def lag(self) -> int:
        """Reports appended and not folded yet."""
        ...


def encode(stats: ReadStats) -> str:
    return json.dumps(
        {
            "v": FORMAT,
            "scans": stats.scans,
            "w": stats.weight,
            "files": stats.files,
            "skipped": stats.skipped,
            "bytes": stats.bytes,
            "planning_ms": stats.planning_ms,
            "at": stats.at,
            "last": stats.last_read,
            "fc": dict(stats.filter_columns),
            "pc": dict(stats.projected),
        },
        separators=(",", ":"),
        sort_keys=True,
    )


def decode(raw: str | bytes) -> ReadStats | None:
    """Statistics as :func:`encode` wrote them; None for another format or damaged ones."""
    try:
        d = json.loads(raw)
        if not isinstance(d, dict) or d.get("v") != FORMAT:
            return None
        return ReadStats(
            scans=int(d["scans"]),
            weight=float(d["w"]),
            files=float(d["files"]),
            skipped=float(d["skipped"]),
            bytes=float(d["bytes"]),
            planning_ms=float(d["planning_ms"]),
            at=float(d["at"]),
            last_read=float(d["last"]),
            filter_columns={str(k): float(v) for k, v in d["fc"].items()},
            projected={str(k): float(v) for k, v in d["pc"].items()},
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def sort_reports(
    entries: Sequence[tuple[str, Mapping[str, str] | None]], resolve: Resolve
) -> tuple[dict[str, list[ScanRecord]], Folded]:
    """Stream entries (id, fields; None: trimmed while pending) as each managed table's
    readers' scans, and what was set aside."""
    by_table: dict[str, list[ScanRecord]] = {}
    folded = Folded()
    for _, fields in entries:
        if fields is None:
            continue  # trimmed away before anyone folded it: nothing left to count
        try:
            record = ScanRecord.of(fields)
        except ValueError:
            folded.malformed += 1
            continue
        table = resolve(record.table)
        if record.own:
            folded.own += 1
        elif table is None:
            folded.unmanaged += 1
        else:
            by_table.setdefault(table, []).append(record)
    for table, records in by_table.items():
        records.sort(key=lambda r: r.at)
        folded.tables[table] = len(records)
    return by_table, folded


def folded_stats(
    before: Mapping[str, ReadStats | None],
    by_table: Mapping[str, list[ScanRecord]],
    half_life_s: float,
) -> dict[str, ReadStats]:
    return {t: (before.get(t) or ReadStats()).add(rs, half_life_s) for t, rs in by_table.items()}


def counter_deltas(folded: Folded) -> dict[str, int]:
    deltas = {
        "folded": sum(folded.tables.values()),
        "own": folded.own,
        "unmanaged": folded.unmanaged,
        "malformed": folded.malformed,
    }
    return {k: v for k, v in deltas.items() if v}
