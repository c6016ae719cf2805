"""Readers' scan reports and read statistics on Redis, all in the ``{r}`` slot: the reports
stream (read by the consumer group ``icefloe``: XAUTOCLAIM of idle pending entries, then
XREADGROUP), the statistics hash (table → JSON) and the counters; a fold is one WATCH/MULTI
over the hash that also acknowledges the reports it folded."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from icefloe.base.keys import Keys
from icefloe.base.redis_client import text, translated
from icefloe.optimizer.reads import ReadStats
from icefloe.state.reads import (
    Folded,
    ReadStore,
    Resolve,
    counter_deltas,
    decode,
    encode,
    folded_stats,
    sort_reports,
)

GROUP = "icefloe"  # the consumer group every fold reads the reports stream in
Entries = list[tuple[str, Mapping[str, str] | None]]


class RedisReads(ReadStore):
    def __init__(self, client: Any, keys: Keys, consumer: str, claim_idle_ms: int = 300_000):
        self.r = client
        self.k = keys
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms
        self._grouped = False

    def _ensure_group(self) -> None:
        # redis-py, slow to import: only when Redis is used
        import redis

        try:  # from the stream's start: every report still held is folded once
            self.r.xgroup_create(self.k.reads, GROUP, id="0", mkstream=True)
        except redis.exceptions.ResponseError as e:
            if "BUSYGROUP" not in str(e):  # Redis's documented error code
                raise
        self._grouped = True

    @staticmethod
    def _parse(rows: Any) -> Entries:
        out: Entries = []
        for raw_id, fields in rows or []:
            kept = None if fields is None else {text(k): text(v) for k, v in fields.items()}
            out.append((text(raw_id), kept))
        return out

    def _take(self, limit: int) -> Entries:
        # redis-py, slow to import: only when Redis is used
        import redis

        if not self._grouped:
            self._ensure_group()
        try:
            claimed = self.r.xautoclaim(
                self.k.reads, GROUP, self.consumer, self.claim_idle_ms, "0-0", count=limit
            )
        except redis.exceptions.ResponseError as e:
            if "NOGROUP" not in str(e):
                raise
            self._ensure_group()  # Redis restarted empty, or the stream was deleted
            claimed = [None, [], []]
        entries = self._parse(claimed[1])
        gone = [text(i) for i in (claimed[2] if len(claimed) > 2 else [])]
        entries += [(i, None) for i in gone]  # trimmed while pending: acknowledged only
        if len(entries) < limit:
            new = self.r.xreadgroup(
                GROUP, self.consumer, {self.k.reads: ">"}, count=limit - len(entries)
            )
            for _, rows in new or []:
                entries += self._parse(rows)
        return entries

    @translated("reads fold")
    def fold(self, resolve: Resolve, half_life_s: float, limit: int) -> Folded:
        # redis-py, slow to import: only when Redis is used
        import redis

        entries = self._take(limit)
        if not entries:
            return Folded()
        by_table, folded = sort_reports(entries, resolve)
        tables = sorted(by_table)
        with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(self.k.read_stats)
                    raw = pipe.hmget(self.k.read_stats, tables) if tables else []
                    pairs = zip(tables, raw, strict=True)
                    before = {t: None if v is None else decode(v) for t, v in pairs}
                    new = folded_stats(before, by_table, half_life_s)
                    pipe.multi()
                    if new:
                        kept = {t: encode(s) for t, s in new.items()}
                        pipe.hset(self.k.read_stats, mapping=kept)
                    for name, n in counter_deltas(folded).items():
                        pipe.hincrby(self.k.read_counters, name, n)
                    pipe.xack(self.k.reads, GROUP, *(i for i, _ in entries))
                    pipe.execute()
                    return folded
                except redis.WatchError:
                    continue  # another fold saved first: read its statistics again

    @translated("reads stats")
    def stats(self, tables: Collection[str] | None = None) -> dict[str, ReadStats]:
        if tables is None:
            raw = {text(k): v for k, v in self.r.hgetall(self.k.read_stats).items()}
        else:
            names = sorted(tables)
            values = self.r.hmget(self.k.read_stats, names) if names else []
            raw = {t: v for t, v in zip(names, values, strict=True) if v is not None}
        out = {}
        for table, value in raw.items():
            stats = decode(value)
            if stats is not None:  # another version's, or damaged: as if never read
                out[table] = stats
        return out

    @translated("reads counters")
    def counters(self) -> dict[str, int]:
        raw = {text(k): int(v) for k, v in self.r.hgetall(self.k.read_counters).items()}
        names = ("folded", "own", "unmanaged", "malformed")
        out = {k: raw.get(k, 0) for k in names}
        out["dropped"] = int(self.r.get(self.k.reads_dropped) or 0)
        return out

    @translated("reads lag")
    def lag(self) -> int:
        # redis-py, slow to import: only when Redis is used
        import redis

        try:
            groups = self.r.xinfo_groups(self.k.reads)
        except redis.exceptions.ResponseError:  # no stream yet
            return 0
        for g in groups:
            if text(g.get("name", g.get(b"name", b""))) == GROUP:
                lag, pending = g.get("lag"), g.get("pending") or 0
                return int(pending) + int(lag if lag is not None else self.r.xlen(self.k.reads))
        return int(self.r.xlen(self.k.reads))
