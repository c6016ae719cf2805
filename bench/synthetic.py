"""A synthetic Iceberg warehouse for benchmarks: many tables, no data files, no catalog.

Real tables cost a catalog round trip to create and an Avro manifest per commit; a bench of
10,000 tables × 100 partitions cannot afford either. These tables are plain Python objects
that answer what the decider, the rolling stats and the table health read from a PyIceberg
table (:meth:`icefloe.service.decider.loop.Decider.refresh`,
:func:`icefloe.state.rolling.scan.catch_up`, :func:`icefloe.base.tablestats.current_partitions`,
:func:`icefloe.state.health.read_health`):

* ``table.properties``, ``.current_snapshot()``, ``.snapshots()``, ``.metadata_location``,
  ``.io.new_input(location)`` (only its ``len``);
* ``table.metadata.snapshot_by_id(id)``, ``.snapshots``, ``.specs()``, ``.specs_struct()``,
  ``.schema()`` (the spec and schema are real PyIceberg objects: the partition values go
  through PyIceberg's own Arrow conversion, as for a real table);
* ``snapshot.snapshot_id``, ``.parent_snapshot_id``, ``.timestamp_ms``, ``.manifests(io)``
  (the parent's manifests and the one it wrote: nothing is ever rewritten or merged);
  ``manifest.added_snapshot_id``, ``.partition_spec_id``, ``.manifest_path``,
  ``.manifest_length``, ``.fetch_manifest_entry(io, discard_deleted=...)``;
  ``entry.status``, ``.snapshot_id``, ``.data_file`` (``partition``, ``content``,
  ``file_size_in_bytes``, ``file_path``, ``record_count``);
* ``table.inspect.files(snapshot_id=current)`` (``.select(columns).to_pylist()``).

Every table is partitioned by ``day(ts)``: partition ``p`` is ``day=<2024-10-04 + p days>``.
A table's base snapshot is generated on demand from a seed (so 10,000 tables cost no memory
until read): each partition holds 1–3 files at or a little above the target and, in half
of them, one small file, so no partition needs work at first sight. Commits
(:meth:`SyntheticTable.commit`, :meth:`~SyntheticTable.append_small`,
:meth:`~SyntheticTable.compact`) are thread-safe: a writer thread may commit while a
decider thread reads. Reading metadata costs nothing here, so a bench on these tables times
icefloe's own code and Redis, not manifest decoding.
"""

from __future__ import annotations

import datetime
import itertools
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass
from typing import Any

from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform
from pyiceberg.types import LongType, NestedField, StructType, TimestampType

from icefloe.base.partition_key import PartitionKey

MiB = 1 << 20
TARGET = 128 * MiB  # icefloe's default target
DATA, ADDED, DELETED = 0, 1, 2  # content DATA; pyiceberg ManifestEntryStatus values
FIRST_DAY = 20_000  # 2024-10-04, in days since the epoch
SNAPSHOT_BASE = 1 << 62  # snapshot ids of 19 digits, like Iceberg's random longs
# lengths reported for metadata that is never written: of the order of real Avro and JSON
MANIFEST_BYTES, ENTRY_BYTES = 4096, 200
METADATA_BYTES, SNAPSHOT_BYTES = 4096, 600

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "ts", TimestampType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, DayTransform(), "day"))
PARTITION_TYPE: StructType = SPEC.partition_type(SCHEMA)


def partition_date(p: int) -> datetime.date:
    """The ``day`` of partition ``p``."""
    return datetime.date(1970, 1, 1) + datetime.timedelta(days=FIRST_DAY + p)


def partition_key(p: int) -> str:
    """The rolling stats' key of partition ``p`` (an encoded ``PartitionKey``)."""
    return PartitionKey.of(0, [("day", "date")], [FIRST_DAY + p]).encode()


@dataclass(frozen=True, slots=True)
class DataFile:
    file_path: str
    partition: tuple[int]  # (days since the epoch,)
    file_size_in_bytes: int
    record_count: int
    content: int = DATA

    @property
    def index(self) -> int:
        """The partition's index in its table."""
        return self.partition[0] - FIRST_DAY


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    status: int
    snapshot_id: int
    data_file: DataFile


class Manifest:
    """The manifest one snapshot wrote; its entries may be generated on demand, so its
    length (what ``icefloe.state.health`` reads from the manifest list) is given."""

    partition_spec_id = 0

    def __init__(
        self,
        path: str,
        snapshot_id: int,
        entries: Callable[[], list[ManifestEntry]],
        count: int,
    ):
        self.manifest_path = path
        self.added_snapshot_id = snapshot_id
        self.manifest_length = MANIFEST_BYTES + ENTRY_BYTES * count
        self._entries = entries

    def fetch_manifest_entry(self, io: Any, discard_deleted: bool = True) -> list[ManifestEntry]:
        entries = self._entries()
        return [e for e in entries if e.status != DELETED] if discard_deleted else entries


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_snapshot_id: int | None
    timestamp_ms: int
    manifest_list: tuple[Manifest, ...]  # the parent's manifests and the one it wrote
    summary: Any = None  # no totals: the health's delete figures read 0

    def manifests(self, io: Any) -> list[Manifest]:
        return list(self.manifest_list)


class _FileIO:
    """``table.io``: only the length of the metadata file is ever asked for."""

    def __init__(self, table: SyntheticTable):
        self._table = table

    def new_input(self, location: str) -> Sized:
        return range(METADATA_BYTES + SNAPSHOT_BYTES * len(self._table._snapshots))


class _Rows:
    """What ``table.inspect.files()`` returns, reduced to ``select(...).to_pylist()``."""

    def __init__(self, rows: list[dict[str, Any]]):
        self._rows = rows

    def select(self, columns: Sequence[str]) -> _Rows:
        return _Rows([{c: r[c] for c in columns} for r in self._rows])

    def to_pylist(self) -> list[dict[str, Any]]:
        return self._rows

    @property
    def num_rows(self) -> int:
        return len(self._rows)


class _Metadata:
    def __init__(self, table: SyntheticTable):
        self._table = table

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self._table._snapshots.get(snapshot_id)

    def specs(self) -> dict[int, PartitionSpec]:
        return {0: SPEC}

    def specs_struct(self) -> StructType:
        return PARTITION_TYPE

    def schema(self) -> Schema:
        return SCHEMA

    @property
    def snapshots(self) -> list[Snapshot]:
        return list(self._table._snapshots.values())

    @property
    def partition_specs(self) -> list[PartitionSpec]:
        return [SPEC]

    statistics: list[Any] = []  # no compute_stats files: a synthetic table has no data
    partition_statistics: list[Any] = []


class _Inspect:
    def __init__(self, table: SyntheticTable):
        self._table = table

    def files(self, snapshot_id: int | None = None) -> _Rows:
        t = self._table
        with t._lock:
            current = t._current.snapshot_id
            if snapshot_id not in (None, current):
                raise ValueError(f"{t.name}: only the current snapshot's files are listed")
            files = t.live_files()
        dates = t.warehouse.dates
        return _Rows(
            [
                {
                    "content": f.content,
                    "file_path": f.file_path,
                    "spec_id": 0,
                    "partition": {"day": dates[f.index]},
                    "record_count": f.record_count,
                    "file_size_in_bytes": f.file_size_in_bytes,
                }
                for f in files
            ]
        )


class SyntheticTable:
    """One table: a generated base snapshot, then whatever is committed to it."""

    def __init__(self, warehouse: SyntheticWarehouse, index: int, name: str):
        self.warehouse = warehouse
        self.index = index
        self.name = name
        self.identifier = tuple(name.split("."))
        self.properties: dict[str, str] = {}
        self.io = _FileIO(self)
        self.metadata = _Metadata(self)
        self.metadata_location = f"{self.location()}/metadata/current.metadata.json"
        self._data = f"{self.location()}/data"
        self.inspect = _Inspect(self)
        self._lock = threading.RLock()
        self._added: dict[str, DataFile] = {}  # live files committed after the base
        self._deleted: set[str] = set()  # base files deleted since
        base_id = warehouse.next_snapshot_id()
        entries = lambda: [ManifestEntry(ADDED, base_id, f) for f in self.base_files()]  # noqa: E731
        base = Manifest(self._manifest_path(base_id), base_id, entries, 5 * self.partitions // 2)
        day_ago = int(time.time() * 1000) - 86_400_000
        self._current = Snapshot(base_id, None, day_ago, (base,))
        self._snapshots: dict[int, Snapshot] = {base_id: self._current}

    @property
    def partitions(self) -> int:
        return self.warehouse.partitions_per_table

    def location(self) -> str:
        return f"mem://warehouse/{'/'.join(self.identifier)}"

    def current_snapshot(self) -> Snapshot:
        return self._current

    def snapshots(self) -> list[Snapshot]:
        return self.metadata.snapshots

    def _manifest_path(self, snapshot_id: int) -> str:
        return f"{self.location()}/metadata/{snapshot_id}-m0.avro"

    def _path(self, p: int, name: str) -> str:
        return f"{self._data}/{self.warehouse.keys[p]}/{name}.parquet"

    def base_files(self) -> list[DataFile]:
        """The base snapshot's files, the same on every call (seeded)."""
        w = self.warehouse
        rng = random.Random(w.seed * 1_000_003 + self.index)
        out = []
        for p in range(w.partitions_per_table):
            sizes = [
                rng.randint(w.target, w.target + w.target // 4) for _ in range(rng.randint(1, 3))
            ]
            if rng.random() < w.small_share:
                sizes.append(rng.randint(MiB, 32 * MiB))
            out += [
                DataFile(self._path(p, f"base-{i}"), (FIRST_DAY + p,), s, s // 100)
                for i, s in enumerate(sizes)
            ]
        return out

    def live_files(self, partition: int | None = None) -> list[DataFile]:
        """The current data files (of one partition), base files first."""
        live = [f for f in self.base_files() if f.file_path not in self._deleted]
        live += self._added.values()
        return live if partition is None else [f for f in live if f.index == partition]

    def commit(
        self, added: Iterable[tuple[int, int]] = (), deleted: Iterable[DataFile] = ()
    ) -> int:
        """One snapshot adding files ``(partition, size)`` and deleting live ``deleted``
        files; its id."""
        with self._lock:
            snap_id = self.warehouse.next_snapshot_id()
            new = [
                DataFile(self._path(p, f"s{snap_id}-{i}"), (FIRST_DAY + p,), s, s // 100)
                for i, (p, s) in enumerate(added)
            ]
            gone = list(deleted)
            for f in gone:
                if self._added.pop(f.file_path, None) is None:
                    if f.file_path in self._deleted or not f.file_path.rsplit("/", 1)[1].startswith(
                        "base-"
                    ):
                        raise ValueError(f"{f.file_path} is not a live file of {self.name}")
                    self._deleted.add(f.file_path)
            self._added.update((f.file_path, f) for f in new)
            entries = [ManifestEntry(ADDED, snap_id, f) for f in new]
            entries += [ManifestEntry(DELETED, snap_id, f) for f in gone]
            manifest = Manifest(
                self._manifest_path(snap_id), snap_id, lambda: entries, len(entries)
            )
            parent = self._current
            snap = Snapshot(
                snap_id,
                parent.snapshot_id,
                int(time.time() * 1000),
                (*parent.manifest_list, manifest),
            )
            self._snapshots[snap_id] = snap
            self._current = snap  # last: a reader sees the snapshot whole or not at all
            return snap_id

    def append_small(self, partitions: Sequence[int], rng: random.Random, files: int = 1) -> int:
        """A streaming writer's commit: ``files`` small files (1–16 MiB) to each partition."""
        return self.commit(
            (p, rng.randint(MiB, 16 * MiB)) for p in partitions for _ in range(files)
        )

    def compact(self, partition: int) -> int | None:
        """An actor's commit: the partition's undersized files replaced by files of at most
        the target (None when it has fewer than two)."""
        target = self.warehouse.target
        with self._lock:  # re-entrant: no other commit between the read and this one
            small = [f for f in self.live_files(partition) if f.file_size_in_bytes < target]
            if len(small) < 2:
                return None
            total = sum(f.file_size_in_bytes for f in small)
            outputs = [target] * (total // target) + ([total % target] if total % target else [])
            return self.commit([(partition, s) for s in outputs], small)


class SyntheticWarehouse:
    """``tables`` tables ``<namespace>.t000000…`` of ``partitions_per_table`` partitions."""

    def __init__(
        self,
        tables: int,
        partitions_per_table: int,
        namespace: str = "bench",
        seed: int = 0,
        target: int = TARGET,
        small_share: float = 0.5,
    ):
        self.namespace = namespace
        self.partitions_per_table = partitions_per_table
        self.seed = seed
        self.target = target
        self.small_share = small_share
        self._ids = itertools.count(SNAPSHOT_BASE + seed * 1_000_000_000)
        self.dates = [partition_date(p) for p in range(partitions_per_table)]
        self.keys = [partition_key(p) for p in range(partitions_per_table)]
        self.names = [f"{namespace}.t{i:06d}" for i in range(tables)]
        self.tables = {name: SyntheticTable(self, i, name) for i, name in enumerate(self.names)}

    def next_snapshot_id(self) -> int:
        return next(self._ids)  # atomic under the GIL: writer threads may share it

    @property
    def partitions(self) -> int:
        return len(self.names) * self.partitions_per_table

    def table(self, name: str) -> SyntheticTable:
        return self.tables[name]

    def catalog(self) -> SyntheticCatalog:
        return SyntheticCatalog(self)


class SyntheticCatalog:
    """The catalog calls the decider makes (``icefloe.base.catalog.load_table``,
    ``managed_tables``), answered from a :class:`SyntheticWarehouse`."""

    name = "synthetic"

    def __init__(self, warehouse: SyntheticWarehouse):
        self.warehouse = warehouse

    def load_table(self, identifier: str | tuple[str, ...]) -> SyntheticTable:
        name = identifier if isinstance(identifier, str) else ".".join(identifier)
        try:
            return self.warehouse.tables[name]
        except KeyError:
            raise NoSuchTableError(f"Table does not exist: {name}") from None

    def table_exists(self, identifier: str | tuple[str, ...]) -> bool:
        name = identifier if isinstance(identifier, str) else ".".join(identifier)
        return name in self.warehouse.tables

    def list_tables(self, namespace: str | tuple[str, ...]) -> list[tuple[str, ...]]:
        ns = namespace if isinstance(namespace, str) else ".".join(namespace)
        return [
            t.identifier
            for t in self.warehouse.tables.values()
            if t.identifier[:-1] == tuple(ns.split("."))
        ]
