"""Each live data file's key bounds, per table and partition: the input of clustering depth.

A table with a layout (:func:`icefloe.base.layoutspec.decided_layout`: sort or z-order) has
its partitions' clustering depth (:meth:`~icefloe.base.layoutspec.LayoutSpec.depth`: a
sort's on key intervals, a z-order's on boxes, column by column) measured on
its data files' key bounds (:meth:`~icefloe.base.layoutspec.LayoutSpec.bounds`, from
manifest metrics: no data read). The decider keeps those intervals as it keeps the rolling
stats: from each new snapshot's added and deleted data files
(:func:`icefloe.state.rolling.scan.catch_up` reads them in the same pass over the
manifests), and rebuilds them from the current file list on a history gap or when the
layout changes (its :func:`signature`: action and columns).

The store (:class:`LayoutStore`) keeps, per (table, partition key: the rolling stats'
encoded :class:`~icefloe.base.partition_key.PartitionKey`), each file's
``FileBounds[str]`` (id: the file path). ``update`` has SET semantics: added files are put,
deleted ones removed, so re-applying a delta changes nothing (a decider that crashes
between the layout update and the rolling stats' transaction replays it harmlessly). Two
deciders racing on one table are kept apart by the stats' compare-and-set: one that
applied a chunk's bounds after another went past that chunk finds the stats moved on
(:class:`~icefloe.state.rolling.GapError`) and rebuilds both from the current files.
Implementations: :class:`icefloe.state.layout.redis.RedisLayouts` (one hash per partition
in the table's slot) and :class:`icefloe.state.layout.memory.MemoryLayouts`; one contract
suite (``tests/support/contracts/layout.py``) runs on both.

Values are stored with :func:`encode_file`, a typed codec that round-trips every bound
value exactly (ints of any size, floats bit for bit incl. -0.0, inf and NaN, str, bytes,
bool, Decimal, UUID, None, and tuples of them).
"""

from __future__ import annotations

import json
import struct
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from icefloe.base.layoutspec import LayoutSpec
from icefloe.optimizer.layout import Depth, FileBounds, clustering_depth
from icefloe.optimizer.zlayout import zorder_depth


class LayoutMismatch(Exception):
    """The stored layout is not of the signature given (or none is stored): rebuild it."""


@dataclass
class LayoutDelta:
    """What one snapshot (or a chain of them, netted) did to one partition's data files."""

    added: dict[str, FileBounds[str]] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.added and not self.deleted


BOXES = ";boxes"
"""A z-order layout's signature ends so: its files are stored as boxes (one value per
column), and one stored before (as interleaved-key intervals) no longer matches: rebuilt."""


def signature(spec: LayoutSpec) -> str:
    """What a stored layout was built for: the action and its columns (``sort:a,b``;
    ``zorder:x,y;boxes``)."""
    return f"{spec.action}:{','.join(spec.columns)}" + (BOXES if spec.zorder else "")


def spec_of(sig: str, tolerance: float) -> LayoutSpec:
    """The layout a stored signature was built for, as far as its depth and plan need it
    (its action, columns and ``tolerance``; no field ids: its bounds are already kept)."""
    action, _, columns = sig.partition(":")
    names = tuple(columns.removesuffix(BOXES).split(","))
    if action == "zorder" and not columns.endswith(BOXES):  # stored before boxes: a sort's
        action = "sort"
    return LayoutSpec(action, names, (), (), tolerance)


def zorder_columns(sig: str) -> int:
    """The z-order columns a stored layout's signature names; 0 for a sort, and for a
    z-order stored before boxes (its key intervals read as a sort's until it is rebuilt)."""
    action, _, columns = sig.partition(":")
    if action != "zorder" or not columns.endswith(BOXES):
        return 0
    return len(columns.removesuffix(BOXES).split(","))


def net(into: dict[str, LayoutDelta], later: Mapping[str, LayoutDelta]) -> None:
    """Fold ``later`` (the next snapshot's deltas) into ``into`` (the chain's so far), so
    that applying ``into`` once equals applying both in order: a file added then deleted is
    only deleted, one deleted then added (same path) only added."""
    for key, d in later.items():
        acc = into.setdefault(key, LayoutDelta())
        deleted = dict.fromkeys(acc.deleted)  # ordered, and O(1) to look up
        for path in d.deleted:
            acc.added.pop(path, None)
            deleted[path] = None
        for path, bounds in d.added.items():
            acc.added[path] = bounds
            deleted.pop(path, None)
        acc.deleted = list(deleted)


SETTLED = "settled"


def encode_depth(depth: Depth, settled: bool = False) -> str:
    """A stored depth: ``"files mean max"`` (the mean as Python's exact float repr), then
    ``settled`` when the partition is."""
    return f"{depth.files} {depth.mean!r} {depth.max}" + (f" {SETTLED}" if settled else "")


def decode_depth(raw: str | bytes) -> Depth:
    files, mean, deepest = (raw.decode() if isinstance(raw, bytes) else raw).split()[:3]
    return Depth(int(files), float(mean), int(deepest))


def is_settled(raw: str | bytes) -> bool:
    """Whether a stored depth (:func:`encode_depth`) is marked settled."""
    return (raw.decode() if isinstance(raw, bytes) else raw).split()[3:4] == [SETTLED]


def depths(
    files_by_partition: Mapping[str, Sequence[FileBounds[str]]], zorder: int = 0
) -> dict[str, Depth]:
    """Each partition's clustering depth (for ``status``): a sort's, or with ``zorder``
    columns a z-order's (``icefloe.optimizer.zlayout``)."""
    if zorder:
        return {k: zorder_depth(files, zorder) for k, files in files_by_partition.items()}
    return {k: clustering_depth(files) for k, files in files_by_partition.items()}


def kept_and_missing(
    store: LayoutStore, table: str, zorder: int = 0
) -> tuple[dict[str, Depth], dict[str, Depth]]:
    """The depths kept for ``table``'s current partitions, and those of the partitions with
    none kept (a layout an older icefloe built, or a pass that stopped between an update
    and its measure) measured from their stored files (:func:`depths`)."""
    parts = store.partitions(table)
    kept = store.saved_depths(table)
    missing = [k for k in parts if k not in kept]
    measured = depths(store.files(table, missing), zorder) if missing else {}
    return {k: kept[k] for k in parts if k in kept}, measured


# ---- the codec ---------------------------------------------------------------------------
def _value(v: Any) -> Any:
    """One bound value as JSON: ints, bools and None as themselves, tuples as lists, the
    rest as a tagged string."""
    if v is None or isinstance(v, bool | int):
        return v
    if isinstance(v, float):
        return "f" + struct.pack(">d", v).hex()
    if isinstance(v, str):
        return "s" + v
    if isinstance(v, bytes):
        return "b" + v.hex()
    if isinstance(v, Decimal):
        return "d" + str(v)
    if isinstance(v, uuid.UUID):
        return "u" + v.hex
    if isinstance(v, tuple):
        return [_value(x) for x in v]
    raise TypeError(f"cannot store a bound value of type {type(v).__name__}: {v!r}")


def _unvalue(raw: Any) -> Any:
    if raw is None or isinstance(raw, bool | int):
        return raw
    if isinstance(raw, list):
        return tuple(_unvalue(x) for x in raw)
    tag, body = raw[0], raw[1:]
    if tag == "f":
        return struct.unpack(">d", bytes.fromhex(body))[0]
    if tag == "s":
        return body
    if tag == "b":
        return bytes.fromhex(body)
    if tag == "d":
        return Decimal(body)
    if tag == "u":
        return uuid.UUID(hex=body)
    raise ValueError(f"unknown bound value tag {tag!r}")


def encode_bound(bound: tuple[object, ...] | None) -> Any:
    """A bound (a tuple of values, or None: unbounded) as JSON-ready data."""
    return None if bound is None else _value(bound)


def decode_bound(raw: Any) -> tuple[object, ...] | None:
    return None if raw is None else tuple(_unvalue(x) for x in raw)


def encode_file(f: FileBounds[str]) -> str:
    """A file's stored value (its path is the field): ``[size, lower, upper]`` as JSON."""
    data = [f.size, encode_bound(f.lower), encode_bound(f.upper)]
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def decode_file(path: str, raw: str | bytes) -> FileBounds[str]:
    size, lower, upper = json.loads(raw)
    return FileBounds(path, int(size), decode_bound(lower), decode_bound(upper))


class LayoutStore(Protocol):
    """Per table and partition, each live data file's bounds; the layout's signature.

    Implementations: :class:`icefloe.state.layout.redis.RedisLayouts`,
    :class:`icefloe.state.layout.memory.MemoryLayouts`."""

    def signature(self, table: str) -> str | None:
        """The signature (:func:`signature`) the stored layout was built for; None: none."""
        ...

    def update(self, table: str, signature: str, deltas: Mapping[str, LayoutDelta]) -> None:
        """Apply the deltas (SET semantics: idempotent) in one step. :class:`LayoutMismatch`
        (nothing written) when the stored layout is not of ``signature``."""
        ...

    def replace(
        self,
        table: str,
        signature: str,
        files_by_partition: Mapping[str, Sequence[FileBounds[str]]],
    ) -> None:
        """A full rebuild: the table's layout becomes exactly this, of ``signature``."""
        ...

    def partitions(self, table: str) -> list[str]:
        """The partitions with files, sorted."""
        ...

    def files(
        self, table: str, keys: Sequence[str] | None = None
    ) -> dict[str, list[FileBounds[str]]]:
        """The files of those of ``keys`` (None: every partition) that have any, each
        partition's sorted by path."""
        ...

    def generation(self, table: str) -> int:
        """A count of the table's :meth:`update` and :meth:`replace` calls: read it before
        the files whose depths :meth:`save_depths` then keeps."""
        ...

    def save_depths(
        self,
        table: str,
        signature: str,
        measured: Mapping[str, Depth],
        generation: int,
        settled: Collection[str] = (),
    ) -> None:
        """Keep each partition's depth as measured from its stored files (for ``status``)
        at ``generation``, marked ``settled`` for those of ``settled`` (only icefloe's own
        rewrites changed them since they were decided: not queued again); nothing when the
        files changed since (another generation) or the stored layout is not of
        ``signature`` any more."""
        ...

    def saved_depths(self, table: str) -> dict[str, Depth]:
        """The depths :meth:`save_depths` kept whose partitions' files have not changed
        since (:meth:`update` drops a touched partition's, :meth:`replace` all)."""
        ...

    def saved_settled(self, table: str) -> set[str]:
        """Of those, the partitions kept as settled."""
        ...

    def forget(self, table: str) -> None: ...
