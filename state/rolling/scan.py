"""Reading Iceberg metadata for the rolling stats, and :func:`catch_up`, which walks a
table's new snapshots into any :class:`~icefloe.state.rolling.StatsStore`."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icefloe.base.layoutspec import LayoutSpec
from icefloe.base.partition_key import PartitionKey
from icefloe.base.tablestats import (
    PartitionFiles,
    ancestry,
    current_partitions,
    own_rewrite,
    spec_fields,
)
from icefloe.optimizer import PartitionStats, merge_stats
from icefloe.state.layout import LayoutDelta, LayoutMismatch, LayoutStore, net, signature
from icefloe.state.layout.scan import file_bounds, rebuild
from icefloe.state.rolling import ApplyResult, GapError, PartitionDelta, StatsStore

if TYPE_CHECKING:
    from pyiceberg.table import Table

DATA = 0
ADDED, DELETED = 1, 2  # pyiceberg ManifestEntryStatus values
# snapshots applied per transaction: a table's new snapshots since the last pass (a burst,
# or a decider catching up after downtime) cost one transaction per chunk, not per snapshot
CHAIN_CHUNK = 100


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
    for snap in ancestry(table):
        if snap.snapshot_id == last_applied:
            return chain[::-1]
        chain.append(snap.snapshot_id)
    raise GapError(f"snapshot {last_applied} is not an ancestor of the current one")


def _partition_converter(table: Table) -> Any:
    """Turn raw partition tuples (spec id, manifest ``Record``) into partition keys: the
    same encoded :class:`~icefloe.base.partition_key.PartitionKey` ``inspect.files`` rows give.
    Each distinct tuple is encoded once per converter (a chain's snapshots touch the same
    partitions over and over)."""
    fields = spec_fields(table)
    known: dict[tuple[int, tuple[Any, ...]], str] = {}

    def convert(rows: list[tuple[int, Any]]) -> list[str]:
        out = []
        for spec_id, part in rows:
            spec = fields[spec_id]
            values = tuple(part[pos] for pos in range(len(spec)))
            key = known.get((spec_id, values))
            if key is None:
                key = known[(spec_id, values)] = PartitionKey.of(spec_id, spec, values).encode()
            out.append(key)
        return out

    return convert


def snapshot_delta(
    table: Table,
    snapshot_id: int,
    convert: Any = None,
    layout: LayoutSpec | None = None,
    files: dict[str, LayoutDelta] | None = None,
) -> dict[str, PartitionDelta]:
    """Added/deleted files of one snapshot, by partition, from the manifests it wrote.

    ``convert``: the table's partition converter (``_partition_converter``), built once
    for a whole chain of snapshots by :func:`catch_up`; None builds one. ``layout``: also
    fold the snapshot's added data files' bounds and deleted data files' paths into
    ``files`` (by partition; :func:`icefloe.state.layout.net`), from the same entries."""
    snap = table.metadata.snapshot_by_id(snapshot_id)
    if snap is None:
        raise GapError(f"snapshot {snapshot_id} is gone")
    raw: list[tuple[int, Any, int, int, int, int]] = []  # spec, partition, status, content,
    # size, records
    data_files: list[Any] = []  # beside raw: the entry's data file (with a layout)
    for manifest in snap.manifests(table.io):
        if manifest.added_snapshot_id != snapshot_id:
            continue
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            status = int(entry.status)
            if status not in (ADDED, DELETED) or entry.snapshot_id != snapshot_id:
                continue
            df = entry.data_file
            raw.append(
                (
                    manifest.partition_spec_id,
                    df.partition,
                    status,
                    int(df.content),
                    int(df.file_size_in_bytes),
                    int(df.record_count),
                )
            )
            if layout is not None:
                data_files.append(df)
    if raw and convert is None:
        convert = _partition_converter(table)
    keys = convert([(r[0], r[1]) for r in raw]) if raw else []
    if layout is not None and files is not None:
        net(files, _layout_delta(layout, keys, raw, data_files))
    out: dict[str, PartitionDelta] = defaultdict(PartitionDelta)
    for key, (_, _, status, content, size, records) in zip(keys, raw, strict=True):
        d = out[key]
        sign = 1 if status == ADDED else -1
        if content == DATA:
            (d.added if status == ADDED else d.deleted).append(size)
            d.data_rows += sign * records
            continue
        if status == ADDED:
            d.added_deletes += 1
        else:
            d.removed_deletes += 1
        d.delete_bytes += sign * size
        d.deleted_rows += sign * records
    return dict(out)


def _layout_delta(
    layout: LayoutSpec, keys: list[str], raw: list[tuple[Any, ...]], data_files: list[Any]
) -> dict[str, LayoutDelta]:
    """One snapshot's data files, by partition: the added ones' bounds, the deleted paths."""
    out: dict[str, LayoutDelta] = defaultdict(LayoutDelta)
    for key, r, df in zip(keys, raw, data_files, strict=True):
        if r[3] != DATA:
            continue
        if r[2] == ADDED:
            metrics = [df.lower_bounds, df.upper_bounds, df.null_value_counts, df.nan_value_counts]
            out[key].added[df.file_path] = file_bounds(layout, df.file_path, r[4], metrics)
        else:
            out[key].deleted.append(df.file_path)
    return dict(out)


def full_stats(
    table: Table, target: int, parts: list[PartitionFiles] | None = None
) -> dict[str, PartitionStats]:
    """Exact stats of every partition from the current file list (the reference);
    ``parts``: that list, when already read."""
    by_key: dict[str, list[PartitionStats]] = defaultdict(list)
    for part in current_partitions(table) if parts is None else parts:
        by_key[part.key].append(part.stats(target))
    return {k: merge_stats(v) for k, v in by_key.items()}


@dataclass
class _Layout:
    """A table's layout during one catch-up: ``track`` the deltas into the store, or
    ``rebuild`` it at the end (no stored layout of this signature)."""

    spec: LayoutSpec
    store: LayoutStore
    rebuild: bool
    touched: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, spec: LayoutSpec | None, store: LayoutStore | None, name: str) -> _Layout | None:
        """None without a layout; a layout kept before (the policy changed) is dropped,
        else it would miss the snapshots from now on."""
        if store is None:
            return None
        stored = store.signature(name)
        if spec is None:
            if stored is not None:
                store.forget(name)
            return None
        return cls(spec, store, stored != signature(spec))

    def update(self, name: str, deltas: dict[str, LayoutDelta]) -> None:
        """Apply one chunk's deltas (before the rolling stats' transaction of the chunk: a
        crash in between replays them, harmlessly)."""
        changed = {k: d for k, d in deltas.items() if not d.empty}
        if self.rebuild or not changed:
            return
        try:
            self.store.update(name, signature(self.spec), changed)
            self.touched.update(changed)
        except LayoutMismatch:  # the layout changed under us: rebuilt at the end
            self.rebuild = True


def catch_up(
    store: StatsStore,
    table_name: str,
    table: Table,
    target: int,
    now: float | None = None,
    layout: LayoutSpec | None = None,
    layouts: LayoutStore | None = None,
) -> ApplyResult:
    """Bring ``table_name``'s stats to the table's current snapshot (rolling or full).

    The new snapshots are applied in chains of up to :data:`CHAIN_CHUNK`, one
    :meth:`~icefloe.state.rolling.StatsStore.apply` (one transaction) each. With a
    ``layout`` and its store ``layouts``, each chain's data files' bounds go to the store
    first (:mod:`icefloe.state.layout`), read from the same manifest entries; the store is
    rebuilt from the current files on a full scan or when its signature is not the
    layout's. The partitions whose layout changed: ``ApplyResult.layout_touched``."""
    now = time.time() if now is None else now
    current = table.current_snapshot()
    current_id = None if current is None else current.snapshot_id
    lay = _Layout.of(layout, layouts, table_name)
    try:
        if store.target(table_name) not in (None, target):
            raise GapError(f"target changed to {target}")
        # one read: the chain and the first parent must come from the same state (another
        # leader applying in between would otherwise get its snapshots applied twice)
        parent = store.last_applied(table_name)
        chain = snapshots_since(table, parent)
        if not chain and parent is not None:  # nothing new: rebuilt only if of an older icefloe
            older = store.stale(table_name)
            if older:
                raise GapError(older)
        touched: dict[str, PartitionStats] = {}
        foreign: set[str] = set()  # partitions a snapshot not icefloe's rewrite changed
        events = applied = 0
        convert = _partition_converter(table) if chain else None
        for at in range(0, len(chain), CHAIN_CHUNK):
            chunk = chain[at : at + CHAIN_CHUNK]
            spec = None if lay is None or lay.rebuild else lay.spec
            files: dict[str, LayoutDelta] = {}
            steps = [(i, snapshot_delta(table, i, convert, spec, files)) for i in chunk]
            foreign.update(k for i, d in steps if not own_rewrite(table, i) for k in d)
            if lay is not None:
                lay.update(table_name, files)
            events += sum(d.events for _, deltas in steps for d in deltas.values())
            *earlier, (last_id, deltas) = steps
            result = store.apply(table_name, parent, last_id, target, deltas, now, earlier)
            if result is not None:
                touched.update(result)
                # a chunk another decider applied part of in the meantime counts whole here
                # (the store's snapshots_applied counter is exact)
                applied += len(chunk)
            parent = last_id
        if lay is not None and lay.rebuild:
            parts = current_partitions(table, layout=lay.spec)
            lay.touched = rebuild(lay.store, table_name, lay.spec, parts)
        laid = frozenset(lay.touched) if lay is not None else frozenset()
        settled = frozenset() if lay is None or lay.rebuild else laid - foreign
        return ApplyResult(
            table_name, current_id, applied, False, events, touched, "", laid, settled
        )
    except GapError as gap:
        parts = current_partitions(table, layout=None if lay is None else lay.spec)
        stats = full_stats(table, target, parts)
        store.replace(table_name, current_id, target, stats, now)
        laid = (
            frozenset()
            if lay is None
            else frozenset(rebuild(lay.store, table_name, lay.spec, parts))
        )
        return ApplyResult(
            table_name,
            current_id,
            0,
            True,
            sum(s.n + s.delete_files for s in stats.values()),
            dict(stats),
            reason=str(gap),
            layout_touched=laid,
        )
