"""Rolling per-partition entropy stats, kept exact in Redis from each snapshot's delta.

Why rolling: a full partition scan lists every file; a snapshot only lists what it
changed. For every snapshot since the last one applied to a table (walked through parent
ids, oldest first, so several commits between two polls all count) we read only the
manifests that snapshot wrote (``manifest.added_snapshot_id == snapshot``) and in them only
the entries it ADDED or DELETED, then update each touched partition's ``N``/``SSE`` with
:func:`optimizer.apply_delta` (exact Python ints; Redis holds them as decimal strings, so
they never overflow a 64-bit counter or a Lua double).

Atomicity and idempotence: one MULTI/EXEC per snapshot writes the partition fields *and*
the table's ``last_snapshot`` id, under WATCH of both keys, and only if ``last_snapshot`` is
still the snapshot's parent. Applying the same snapshot twice therefore changes nothing,
and two deciders racing lose nothing (the loser's transaction aborts and it re-reads).

Fallback: no ``last_snapshot`` (new table, Redis restarted empty), a history gap (the last
applied id is not an ancestor: expired snapshots, rollback, replaced table), a changed
target size, or a delta that deletes from a partition we do not know, all trigger a full
scan of the table's metadata (:func:`service.tablestats.current_partitions`) that replaces
the table's stats in one transaction.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optimizer import PartitionStats, apply_delta, merge_stats, stats_from_sizes
from service.keys import Keys
from service.tablestats import partition_key

if TYPE_CHECKING:
    from pyiceberg.table import Table

DATA = 0
ADDED, DELETED = 1, 2  # pyiceberg ManifestEntryStatus values


@dataclass
class PartitionDelta:
    """What one snapshot did to one partition."""

    added: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    added_deletes: int = 0
    removed_deletes: int = 0

    @property
    def events(self) -> int:
        return len(self.added) + len(self.deleted) + self.added_deletes + self.removed_deletes


@dataclass(frozen=True)
class ApplyResult:
    """The outcome of bringing one table's stats up to its current snapshot."""

    table: str
    snapshot_id: int | None
    snapshots_applied: int
    full_scan: bool
    file_events: int
    touched: dict[str, PartitionStats]  # partition → stats after the update
    reason: str = ""


class GapError(Exception):
    """The rolling update cannot continue; the table needs a full scan (message says why)."""


def encode(stats: PartitionStats) -> str:
    return f"{stats.n} {stats.sse} {stats.total_bytes} {stats.undersized} {stats.delete_files}"


def decode(raw: str | bytes) -> PartitionStats:
    text = raw.decode() if isinstance(raw, bytes) else raw
    n, sse, total, under, deletes = (int(x) for x in text.split())
    return PartitionStats(n, sse, total, under, deletes)


def _str(raw: Any) -> str | None:
    if raw is None:
        return None
    return raw.decode() if isinstance(raw, bytes) else str(raw)


# --------------------------------------------------------------------------------------
# reading metadata


def snapshots_since(table: Table, last_applied: int | None) -> list[int]:
    """Snapshot ids after ``last_applied`` up to the current one, oldest first.

    Raises :class:`GapError` when ``last_applied`` is not an ancestor of the current one.
    """
    current = table.current_snapshot()
    if current is None:
        if last_applied is None:
            return []
        raise GapError("table has no current snapshot any more")
    if last_applied is None:
        raise GapError("no snapshot applied yet")
    chain: list[int] = []
    snap: Any = current
    while snap is not None and snap.snapshot_id != last_applied:
        chain.append(snap.snapshot_id)
        parent = snap.parent_snapshot_id
        snap = None if parent is None else table.metadata.snapshot_by_id(parent)
    if snap is None:
        raise GapError(f"snapshot {last_applied} is not an ancestor of the current one")
    chain.reverse()
    return chain


def _partition_converter(table: Table) -> Any:
    """Turn raw partition tuples into the same keys ``inspect.files`` produces."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    struct = schema_to_pyarrow(table.metadata.specs_struct())
    arrow_type = pa.struct(list(struct))
    specs = table.metadata.specs()

    def convert(rows: list[tuple[int, Any]]) -> list[str]:
        dicts = [
            {f.name: part[pos] for pos, f in enumerate(specs[spec_id].fields)}
            for spec_id, part in rows
        ]
        if not arrow_type.num_fields:
            return ["" for _ in dicts]
        return [partition_key(d) for d in pa.array(dicts, type=arrow_type).to_pylist()]

    return convert


def snapshot_delta(table: Table, snapshot_id: int) -> dict[str, PartitionDelta]:
    """Added/deleted files of one snapshot, by partition, from the manifests it wrote."""
    snap = table.metadata.snapshot_by_id(snapshot_id)
    if snap is None:
        raise GapError(f"snapshot {snapshot_id} is gone")
    raw: list[tuple[int, Any, int, int, int]] = []  # spec, partition, status, content, size
    for manifest in snap.manifests(table.io):
        if manifest.added_snapshot_id != snapshot_id:
            continue
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            status = int(entry.status)
            if status not in (ADDED, DELETED) or entry.snapshot_id != snapshot_id:
                continue
            df = entry.data_file
            raw.append((manifest.partition_spec_id, df.partition, status, int(df.content),
                        int(df.file_size_in_bytes)))
    keys = _partition_converter(table)([(r[0], r[1]) for r in raw]) if raw else []
    out: dict[str, PartitionDelta] = defaultdict(PartitionDelta)
    for key, (_, _, status, content, size) in zip(keys, raw, strict=True):
        d = out[key]
        if content == DATA:
            (d.added if status == ADDED else d.deleted).append(size)
        elif status == ADDED:
            d.added_deletes += 1
        else:
            d.removed_deletes += 1
    return dict(out)


def full_stats(table: Table, target: int) -> dict[str, PartitionStats]:
    """Exact stats of every partition from the current file list (the reference)."""
    from service.tablestats import current_partitions

    by_key: dict[str, list[PartitionStats]] = defaultdict(list)
    for part in current_partitions(table):
        by_key[part.key].append(stats_from_sizes(part.sizes, target, part.delete_files))
    return {k: merge_stats(v) for k, v in by_key.items()}


# --------------------------------------------------------------------------------------
# Redis store


class RollingStats:
    """Per-table partition stats in Redis, updated one snapshot per transaction."""

    def __init__(self, client: Any, keys: Keys):
        self.r = client
        self.k = keys

    def last_applied(self, table: str) -> int | None:
        raw = _str(self.r.hget(self.k.table_state(table), "last_snapshot"))
        return (int(raw) or None) if raw else None  # 0 records "applied an empty table"

    def decided(self, table: str) -> int | None:
        """The snapshot whose actions were last enqueued (the decider's second marker)."""
        raw = _str(self.r.hget(self.k.table_state(table), "decided_snapshot"))
        return (int(raw) or None) if raw else None

    def mark_decided(self, table: str, snapshot_id: int | None) -> None:
        self.r.hset(self.k.table_state(table), "decided_snapshot", snapshot_id or 0)

    def target(self, table: str) -> int | None:
        raw = _str(self.r.hget(self.k.table_state(table), "target"))
        return int(raw) if raw else None

    def partitions(self, table: str) -> dict[str, PartitionStats]:
        return {_str(k) or "": decode(v) for k, v in self.r.hgetall(self.k.stats(table)).items()}

    def apply(self, table: str, parent: int | None, snapshot_id: int, target: int,
              deltas: Mapping[str, PartitionDelta], now: float) -> dict[str, PartitionStats] | None:
        """Apply one snapshot atomically. None when it was already applied."""
        import redis

        state, stats_key = self.k.table_state(table), self.k.stats(table)
        keys = sorted(deltas)
        with self.r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(state, stats_key)
                    last, cur_target = pipe.hmget(state, "last_snapshot", "target")
                    last_id = int(_str(last) or 0) or None
                    if last_id == snapshot_id:
                        pipe.reset()
                        return None
                    if last_id != parent:
                        raise GapError(f"last applied {last_id} is not the parent {parent}")
                    if _str(cur_target) != str(target):
                        raise GapError(f"target changed to {target}")
                    current = pipe.hmget(stats_key, keys) if keys else []
                    new: dict[str, PartitionStats] = {}
                    for key, raw in zip(keys, current, strict=True):
                        before = decode(raw) if raw is not None else PartitionStats()
                        d = deltas[key]
                        try:
                            new[key] = apply_delta(before, target, d.added, d.deleted,
                                                   d.added_deletes, d.removed_deletes)
                        except ValueError as e:
                            raise GapError(f"partition {key!r} out of step: {e}") from None
                    pipe.multi()
                    gone = [k for k, s in new.items() if s.is_empty]  # as the full scan
                    if gone:
                        pipe.hdel(stats_key, *gone)
                    kept = {k: encode(s) for k, s in new.items() if k not in gone}
                    if kept:
                        pipe.hset(stats_key, mapping=kept)
                    pipe.hset(state, mapping={"last_snapshot": snapshot_id, "applied_at": now})
                    pipe.sadd(self.k.known_tables, table)
                    pipe.hincrby(self.k.counters, "snapshots_applied", 1)
                    pipe.execute()
                    return new
                except redis.WatchError:
                    continue

    def replace(self, table: str, snapshot_id: int | None, target: int,
                stats: Mapping[str, PartitionStats], now: float) -> None:
        """A full scan's result replaces the table's stats (and resets any drift)."""
        state, stats_key = self.k.table_state(table), self.k.stats(table)
        pipe = self.r.pipeline(transaction=True)
        pipe.delete(stats_key)
        if stats:
            pipe.hset(stats_key, mapping={k: encode(s) for k, s in stats.items()})
        pipe.hset(state, mapping={"last_snapshot": snapshot_id or 0, "target": target,
                                  "applied_at": now})
        pipe.hincrby(state, "full_scans", 1)
        pipe.sadd(self.k.known_tables, table)
        pipe.hincrby(self.k.counters, "full_scans", 1)
        pipe.execute()

    def forget(self, table: str) -> None:
        self.r.delete(self.k.stats(table), self.k.table_state(table))
        self.r.srem(self.k.known_tables, table)


def catch_up(store: RollingStats, table_name: str, table: Table, target: int,
             now: float | None = None) -> ApplyResult:
    """Bring ``table_name``'s stats to the table's current snapshot (rolling or full)."""
    now = time.time() if now is None else now
    current = table.current_snapshot()
    current_id = None if current is None else current.snapshot_id
    try:
        if store.target(table_name) not in (None, target):
            raise GapError(f"target changed to {target}")
        chain = snapshots_since(table, store.last_applied(table_name))
        touched: dict[str, PartitionStats] = {}
        events = applied = 0
        parent = store.last_applied(table_name)
        for snap_id in chain:
            deltas = snapshot_delta(table, snap_id)
            events += sum(d.events for d in deltas.values())
            result = store.apply(table_name, parent, snap_id, target, deltas, now)
            if result is not None:
                touched.update(result)
                applied += 1
            parent = snap_id
        return ApplyResult(table_name, current_id, applied, False, events, touched)
    except GapError as gap:
        stats = full_stats(table, target)
        store.replace(table_name, current_id, target, stats, now)
        return ApplyResult(table_name, current_id, 0, True,
                           sum(s.n + s.delete_files for s in stats.values()), dict(stats),
                           reason=str(gap))
