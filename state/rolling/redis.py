"""The stats store on Redis: one hash of partition stats and one state hash per table.

One MULTI/EXEC per snapshot, or per chain of snapshots (``apply``'s ``earlier``), writes
the partition fields *and* the table's ``last_snapshot``, under WATCH of both keys:
two deciders racing lose nothing (the loser's transaction aborts and it re-reads, then sees
the snapshots applied). A table's two keys share its hash tag (``icefloe.base.keys``), so the
transaction runs on a Redis Cluster too; the decider-wide bookkeeping it also touches (the
known tables, the counters) is in another slot, so it is written outside the transaction:
a table becomes known (``replace``) before its stats are first written, and the counters
count after the commit (a crash in between loses one count, never stats). ``apply`` needs
the state a ``replace`` wrote (else its target check fails), so the table is already known
there and ``apply`` spends no round trip on it: four round trips per transaction (WATCH,
the state, the touched fields, MULTI/EXEC) and one for the counter.
Every public method is an adapter boundary: Redis library errors leave it as
:class:`icefloe.base.errors.ServiceUnavailable`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.base.keys import Keys
from icefloe.base.partition_key import KEY_FORMAT
from icefloe.base.redis_client import text, translated
from icefloe.optimizer import PartitionStats
from icefloe.state.ledger.redis import RedisLedger
from icefloe.state.rolling import (
    STATS_FORMAT,
    PartitionDelta,
    StatsStore,
    chain_start,
    chain_stats,
    decode,
    encode,
    older_format,
)

TABLES_A_PIPELINE = 500  # tables read in one round trip by last_and_waiting


def _int(raw: Any) -> int | None:
    return None if raw is None or raw == b"" or raw == "" else int(text(raw))


class RollingStats(StatsStore):
    """Per-table partition stats in Redis, updated one snapshot per transaction."""

    def __init__(self, client: Any, keys: Keys):
        self.r = client
        self.k = keys
        self.ledger = RedisLedger(client, keys)  # where the store counts what it applied

    @translated("stats last_applied")
    def last_applied(self, table: str) -> int | None:
        # 0 records "applied an empty table"
        return _int(self.r.hget(self.k.table_state(table), "last_snapshot")) or None

    @translated("stats decided")
    def decided(self, table: str) -> int | None:
        return _int(self.r.hget(self.k.table_state(table), "decided_snapshot")) or None

    @translated("stats mark_decided")
    def mark_decided(self, table: str, snapshot_id: int | None) -> None:
        self.r.hset(self.k.table_state(table), "decided_snapshot", snapshot_id or 0)

    @translated("stats stale")
    def stale(self, table: str) -> str | None:
        fields = ("last_snapshot", "keys", "stats")
        last, keys_fmt, stats_fmt = self.r.hmget(self.k.table_state(table), fields)
        return older_format(_int(keys_fmt), _int(stats_fmt)) if _int(last) else None

    @translated("stats target")
    def target(self, table: str) -> int | None:
        return _int(self.r.hget(self.k.table_state(table), "target"))

    @translated("stats partitions")
    def partitions(self, table: str) -> dict[str, PartitionStats]:
        return {text(k): decode(v) for k, v in self.r.hgetall(self.k.stats(table)).items()}

    @translated("stats partitions_of")
    def partitions_of(self, table: str, keys: Sequence[str]) -> dict[str, PartitionStats]:
        raws = self.r.hmget(self.k.stats(table), list(keys)) if keys else []
        return {k: decode(raw) for k, raw in zip(keys, raws, strict=True) if raw is not None}

    @translated("stats mark_waiting")
    def mark_waiting(
        self, table: str, held: Sequence[str], released: Sequence[str], now: float
    ) -> None:
        if not held and not released:
            return
        pipe = self.r.pipeline(transaction=False)
        if released:
            pipe.zrem(self.k.waiting(table), *released)
        if held:
            pipe.zadd(self.k.waiting(table), dict.fromkeys(held, now), nx=True)
        pipe.execute()

    @translated("stats waiting")
    def waiting(self, table: str) -> dict[str, float]:
        pairs = self.r.zrange(self.k.waiting(table), 0, -1, withscores=True)
        return {text(k): float(t) for k, t in pairs}

    @translated("stats last_and_waiting")
    def last_and_waiting(
        self, tables: Sequence[str]
    ) -> dict[str, tuple[int | None, dict[str, float]]]:
        out = {}
        for at in range(0, len(tables), TABLES_A_PIPELINE):
            chunk = tables[at : at + TABLES_A_PIPELINE]
            pipe = self.r.pipeline(transaction=False)
            for table in chunk:
                pipe.hget(self.k.table_state(table), "last_snapshot")
                pipe.zrange(self.k.waiting(table), 0, -1, withscores=True)
            got = pipe.execute()
            for i, table in enumerate(chunk):
                last, pairs = got[2 * i], got[2 * i + 1]
                out[table] = (_int(last) or None, {text(k): float(t) for k, t in pairs})
        return out

    @translated("stats apply")
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
        """Apply one snapshot (after the chain ``earlier``) in one transaction. None when
        it was already applied."""
        # redis-py, slow to import: only when Redis is used
        import redis

        state, stats_key = self.k.table_state(table), self.k.stats(table)
        steps = [*earlier, (snapshot_id, deltas)]
        ids = [step_id for step_id, _ in steps]
        with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(state, stats_key)
                    last, cur_target, keys_fmt, stats_fmt = pipe.hmget(
                        state, "last_snapshot", "target", "keys", "stats"
                    )
                    start = chain_start(
                        *(_int(last) or None, _int(cur_target), parent, ids, target),
                        *(_int(keys_fmt), _int(stats_fmt)),
                    )
                    if start is None:
                        pipe.reset()
                        return None
                    todo = steps[start:]
                    keys = sorted({k for _, step in todo for k in step})
                    current = pipe.hmget(stats_key, keys) if keys else []
                    before = {
                        k: None if raw is None else decode(raw)
                        for k, raw in zip(keys, current, strict=True)
                    }
                    new = chain_stats(before, target, todo)
                    pipe.multi()
                    gone = [k for k, s in new.items() if s.is_empty]  # as the full scan
                    if gone:
                        pipe.hdel(stats_key, *gone)
                    kept = {k: encode(s) for k, s in new.items() if k not in gone}
                    if kept:
                        pipe.hset(stats_key, mapping=kept)
                    pipe.hset(state, mapping={"last_snapshot": snapshot_id, "applied_at": now})
                    pipe.execute()
                    self.ledger.count({"snapshots_applied": len(todo)})
                    return new
                except redis.WatchError:
                    continue

    @translated("stats replace")
    def replace(
        self,
        table: str,
        snapshot_id: int | None,
        target: int,
        stats: Mapping[str, PartitionStats],
        now: float,
    ) -> None:
        state, stats_key = self.k.table_state(table), self.k.stats(table)
        self.r.sadd(self.k.known_tables, table)
        pipe = self.r.pipeline(transaction=True)
        pipe.delete(stats_key)
        if stats:
            pipe.hset(stats_key, mapping={k: encode(s) for k, s in stats.items()})
        stamp = {"last_snapshot": snapshot_id or 0, "target": target, "applied_at": now}
        if _int(self.r.hget(state, "keys")) != KEY_FORMAT:  # partition keys of an older icefloe
            pipe.delete(self.k.waiting(table))
        pipe.hset(state, mapping=stamp | {"keys": KEY_FORMAT, "stats": STATS_FORMAT})
        pipe.hincrby(state, "full_scans", 1)
        pipe.execute()
        self.ledger.count({"full_scans": 1})

    @translated("stats forget")
    def forget(self, table: str) -> None:
        self.r.delete(self.k.stats(table), self.k.table_state(table), self.k.waiting(table))
        self.r.srem(self.k.known_tables, table)

    @translated("stats known_tables")
    def known_tables(self) -> list[str]:
        return sorted(text(t) for t in self.r.smembers(self.k.known_tables))
