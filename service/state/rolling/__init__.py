"""Rolling per-partition entropy stats, kept exact in Redis from each snapshot's delta.

Why rolling: a full partition scan lists every file; a snapshot only lists what it
changed. For every snapshot since the last one applied to a table (walked through parent
ids, oldest first, so several commits between two polls all count) we read only the
manifests that snapshot wrote (``manifest.added_snapshot_id == snapshot``) and in them only
the entries it ADDED or DELETED, then update each touched partition's ``N``/``SSE`` with
:func:`optimizer.apply_delta` (exact Python ints; Redis holds them as decimal strings, so
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
scan of the table's metadata (:func:`service.base.tablestats.current_partitions`) that replaces
the table's stats in one transaction.

Modules: ``base`` (value types, the :class:`StatsStore` Protocol, the pure update step),
``scan`` (reading Iceberg metadata; :func:`catch_up`), ``redis`` (:class:`RollingStats`)
and ``memory`` (:class:`MemoryStats`, for unit tests). One contract suite runs on both stores.
"""

from __future__ import annotations

from service.state.rolling.base import (
    ApplyResult,
    GapError,
    PartitionDelta,
    StatsStore,
    decode,
    encode,
)
from service.state.rolling.memory import MemoryStats
from service.state.rolling.redis import RollingStats
from service.state.rolling.scan import catch_up, full_stats, snapshot_delta, snapshots_since

__all__ = [
    "ApplyResult",
    "GapError",
    "MemoryStats",
    "PartitionDelta",
    "RollingStats",
    "StatsStore",
    "catch_up",
    "decode",
    "encode",
    "full_stats",
    "snapshot_delta",
    "snapshots_since",
]
