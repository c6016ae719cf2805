"""Rolling per-partition entropy stats, kept exact in Redis from each snapshot's delta.

Why rolling: a full partition scan lists every file; a snapshot only lists what it
changed. For every snapshot since the last one applied to a table (walked through parent
ids, oldest first, so several commits between two polls all count) we read only the
manifests that snapshot wrote (``manifest.added_snapshot_id == snapshot``) and in them only
the entries it ADDED or DELETED, then update each touched partition's ``N``/``SSE`` with
:func:`icefloe.optimizer.apply_delta` (exact Python ints; Redis holds them as decimal strings, so
they never overflow a 64-bit counter or a Lua double).

Atomicity and idempotence: one MULTI/EXEC per chain of new snapshots (up to
``scan.CHAIN_CHUNK`` of them: every snapshot since the last pass, in one round of writes)
writes the partition fields *and* the table's ``last_snapshot`` id, under WATCH of both
keys, and only if ``last_snapshot`` is still the chain's parent or one of its snapshots
(then only the rest is applied). Applying the same snapshot twice therefore changes
nothing, and two deciders racing lose nothing (the loser's transaction aborts and it
re-reads).

Fallback: no ``last_snapshot`` (new table, Redis restarted empty), a history gap (the last
applied id is not an ancestor: expired snapshots, rollback, replaced table), a changed
target size, or a delta that deletes from a partition we do not know, all trigger a full
scan of the table's metadata (:func:`icefloe.base.tablestats.current_partitions`) that replaces
the table's stats in one transaction.

Here: the value types, the :class:`StatsStore` Protocol and the pure update step (so the
Redis and the in-memory store cannot compute differently). Beside it: ``scan`` (reading
Iceberg metadata; :func:`~icefloe.state.rolling.scan.catch_up`), ``redis``
(:class:`~icefloe.state.rolling.redis.RollingStats`) and ``memory``
(:class:`~icefloe.state.rolling.memory.MemoryStats`, for unit tests). One contract suite
(``tests/support/contracts/rolling.py``) runs on both stores. The decider's bookkeeping
(counters, scheduler state, heartbeats, the launch guard) is :mod:`icefloe.state.ledger`'s;
a store counts its applied snapshots and full scans there.

Upgrades: a table's state records the format of its partition keys (``KEY_FORMAT``) and
of its stats (:data:`STATS_FORMAT`); stats of an older format are not updated in place
(:func:`chain_start`), the decider's first pass over the table rebuilds them by a full
scan (:meth:`StatsStore.stale`), whether or not a commit came since.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Protocol

from icefloe.base.partition_key import KEY_FORMAT
from icefloe.optimizer import PartitionStats, apply_delta

STATS_FORMAT = 3
"""What a stored stats value holds: 1, the counts and sums up to the deleted rows; 2, also
the bytes of the files under Iceberg's minimum size (``PartitionStats.small_bytes``); 3,
also their count (``small_files``)."""


@dataclass
class PartitionDelta:
    """What one snapshot did to one partition."""

    added: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    added_deletes: int = 0
    removed_deletes: int = 0
    data_rows: int = 0  # net: rows of added data files less rows of deleted ones
    delete_bytes: int = 0  # net, of delete files
    deleted_rows: int = 0  # net, of delete files

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
    # partitions whose file bounds changed (a table with a layout: icefloe.state.layout)
    layout_touched: frozenset[str] = frozenset()
    # of those, the ones only icefloe's own rewrites changed: their layout is as icefloe
    # made it, and planning it again would only churn (no new data came)
    layout_settled: frozenset[str] = frozenset()


class GapError(Exception):
    """The rolling update cannot continue; the table needs a full scan (message says why)."""


_FIELDS = len(fields(PartitionStats))


def encode(stats: PartitionStats) -> str:
    """The stats hash value, exact ints: ``"n sse total_bytes undersized delete_files"``,
    then ``" data_rows"``, ``" delete_bytes deleted_rows"`` and ``" small_bytes small_files"``, each
    left out when it and all that follows are 0 (every byte counts at a million
    partitions)."""
    s = stats
    fields = [s.n, s.sse, s.total_bytes, s.undersized, s.delete_files]
    tail = [s.data_rows, s.delete_bytes, s.deleted_rows, s.small_bytes, s.small_files]
    while tail and tail[-1] == 0:
        tail.pop()
    return " ".join(map(str, fields + tail))


def decode(raw: str | bytes) -> PartitionStats:
    """:func:`encode` backwards (five to ten numbers; the stats of an older
    :data:`STATS_FORMAT` read the same way, what they lack as 0, until their rebuild;
    numbers a newer one appends are not read)."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    return PartitionStats(*(int(x) for x in text.split()[:_FIELDS]))


def chain_start(
    last_id: int | None,
    stored_target: int | None,
    parent: int | None,
    snapshot_ids: Sequence[int],
    target: int,
    key_format: int | None = KEY_FORMAT,
    stats_format: int | None = STATS_FORMAT,
) -> int | None:
    """The compare-and-set guard of :meth:`StatsStore.apply`: the index in
    ``snapshot_ids`` (a chain of snapshots, oldest first, the first one a child of
    ``parent``) of the first snapshot still to apply, or None when the whole chain is
    applied (a replay: change nothing). A chain applied part way by another decider goes on
    from where it stands. Raises :class:`GapError` when the stored state is neither the
    chain's parent nor one of its snapshots, the target changed, or the stored partition
    keys or stats are of another ``key_format`` or ``stats_format`` (an upgrade: the full
    scan rebuilds them)."""
    if not snapshot_ids or last_id == snapshot_ids[-1]:
        return None
    if last_id is not None and last_id in snapshot_ids:
        start = snapshot_ids.index(last_id) + 1
    elif last_id == parent:
        start = 0
    else:
        raise GapError(f"last applied {last_id} is not the parent {parent}")
    if stored_target != target:
        raise GapError(f"target changed to {target}")
    older = older_format(key_format, stats_format)
    if older:
        raise GapError(older)
    return start


def older_format(key_format: int | None, stats_format: int | None) -> str | None:
    """Why a table's stored state is of an older icefloe (its partition keys' or its
    stats' format: None for the first), or None when it is current."""
    if key_format != KEY_FORMAT:
        return f"partition keys of format {key_format or 1}, now {KEY_FORMAT}"
    if stats_format != STATS_FORMAT:
        return f"partition stats of format {stats_format or 1}, now {STATS_FORMAT}"
    return None


def chain_stats(
    before: Mapping[str, PartitionStats | None],
    target: int,
    steps: Sequence[tuple[int, Mapping[str, PartitionDelta]]],
) -> dict[str, PartitionStats]:
    """Each partition touched by any step of a chain, after the last step (``before``: the
    stored stats of those partitions, None for a new one). Empty partitions are kept in the
    result with ``n == 0``: the caller drops them from the store."""
    current: dict[str, PartitionStats | None] = dict(before)
    out: dict[str, PartitionStats] = {}
    for _, deltas in steps:
        new = next_stats(current, target, deltas)
        current.update(new)
        out.update(new)
    return out


def next_stats(
    before: Mapping[str, PartitionStats | None], target: int, deltas: Mapping[str, PartitionDelta]
) -> dict[str, PartitionStats]:
    """Each touched partition's stats after the delta (``before`` None: a new partition)."""
    new: dict[str, PartitionStats] = {}
    for key in sorted(deltas):
        d = deltas[key]
        try:
            new[key] = apply_delta(
                before.get(key) or PartitionStats(),
                target,
                d.added,
                d.deleted,
                d.added_deletes,
                d.removed_deletes,
                (d.data_rows, d.delete_bytes, d.deleted_rows),
            )
        except ValueError as e:
            raise GapError(f"partition {key!r} out of step: {e}") from None
    return new


class StatsStore(Protocol):
    """The decider's per-table rolling stats and markers.

    ``apply`` is compare-and-set on the table's last applied snapshot and idempotent on
    replay; ``replace`` installs a full scan's result. Implementations:
    :class:`icefloe.state.rolling.redis.RollingStats`,
    :class:`icefloe.state.rolling.memory.MemoryStats`.
    """

    # ---- rolling stats -------------------------------------------------------------------
    def last_applied(self, table: str) -> int | None: ...

    def decided(self, table: str) -> int | None:
        """The snapshot whose actions were last enqueued (the decider's second marker)."""
        ...

    def mark_decided(self, table: str, snapshot_id: int | None) -> None: ...

    def stale(self, table: str) -> str | None:
        """Why the table's stored stats are of an older icefloe (:func:`older_format`), to
        be rebuilt now rather than at its next commit; None when current, none stored, or
        the table had no snapshot (nothing to rebuild: its first commit scans it)."""
        ...

    def target(self, table: str) -> int | None: ...

    def partitions(self, table: str) -> dict[str, PartitionStats]: ...

    def partitions_of(self, table: str, keys: Sequence[str]) -> dict[str, PartitionStats]:
        """The stats of those of ``keys`` that the table has."""
        ...

    # ---- partitions waiting for more small files (icefloe.service.decider.needs.waiting)
    # ----------------
    def mark_waiting(
        self, table: str, held: Sequence[str], released: Sequence[str], now: float
    ) -> None:
        """``held`` wait from ``now`` (those already waiting keep their start);
        ``released`` wait no more."""
        ...

    def waiting(self, table: str) -> dict[str, float]:
        """The waiting partitions and when each started waiting."""
        ...

    def last_and_waiting(
        self, tables: Sequence[str]
    ) -> dict[str, tuple[int | None, dict[str, float]]]:
        """Each of ``tables``' :meth:`last_applied` and :meth:`waiting` at once (one
        pipelined round trip a few hundred tables): what the decider's pass reads of a
        table nothing changed."""
        return {t: (self.last_applied(t), self.waiting(t)) for t in tables}

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
        """Apply one snapshot atomically; the touched partitions' new stats, or None when it
        was already applied. :class:`GapError` when ``parent`` is not the last applied one,
        the target changed or a partition is out of step (nothing written then).

        ``earlier``: the snapshots before this one since ``parent``, ``(id, deltas)`` oldest
        first: the whole chain is applied in the same one step (one transaction on Redis;
        :func:`icefloe.state.rolling.scan.catch_up` passes every snapshot since the last
        pass). A chain another decider applied part of goes on from where the stored state stands
        (:func:`chain_start`); the result then covers only what this call applied."""
        ...

    def replace(
        self,
        table: str,
        snapshot_id: int | None,
        target: int,
        stats: Mapping[str, PartitionStats],
        now: float,
    ) -> None:
        """A full scan's result replaces the table's stats (and resets any drift)."""
        ...

    def forget(self, table: str) -> None: ...

    def known_tables(self) -> list[str]:
        """Tables with stats, sorted."""
        ...
