"""The layout store on Redis: one hash per (table, partition), path → encoded bounds.

All of a table's layout keys share its hash tag (``icefloe.base.keys``: the partition
hashes, the set naming them, the state hash with the signature), so every transaction runs
on a Redis Cluster too. ``update`` is one MULTI/EXEC under WATCH of the state (three round
trips: WATCH, the signature, the writes), HDEL and HSET per partition: SET semantics, no
round trip per file. A partition left empty is dropped from the set by a second,
WATCHed transaction (skipped when a concurrent write refilled it). Every public method is
an adapter boundary: Redis library errors leave it as
:class:`icefloe.base.errors.ServiceUnavailable`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from icefloe.base.keys import Keys
from icefloe.base.redis_client import text, translated
from icefloe.optimizer.layout import Depth, FileBounds
from icefloe.state.layout import (
    LayoutDelta,
    LayoutMismatch,
    LayoutStore,
    decode_depth,
    decode_file,
    encode_depth,
    encode_file,
    is_settled,
)


class RedisLayouts(LayoutStore):
    """Per-partition file bounds in the table's slot: ``<prefix>:{t:<table>}:layout:<key>``."""

    def __init__(self, client: Any, keys: Keys):
        self.r = client
        self.k = keys

    @translated("layout signature")
    def signature(self, table: str) -> str | None:
        raw = self.r.hget(self.k.layout_state(table), "signature")
        return None if raw is None else text(raw)

    @translated("layout update")
    def update(self, table: str, signature: str, deltas: Mapping[str, LayoutDelta]) -> None:
        # redis-py, slow to import: only when Redis is used
        import redis

        todo = {k: d for k, d in sorted(deltas.items()) if not d.empty}
        state, parts = self.k.layout_state(table), self.k.layout_parts(table)
        with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(state)
                    stored = pipe.hget(state, "signature")
                    if stored is None or text(stored) != signature:
                        pipe.reset()
                        raise LayoutMismatch(f"layout of {table} is not of {signature}")
                    pipe.multi()
                    pipe.hincrby(state, "generation", 1)
                    if todo:  # measured before these changes: measured again by the decider
                        pipe.hdel(self.k.layout_depths(table), *todo)
                    shrunk = []
                    for key, d in todo.items():
                        name = self.k.layout(table, key)
                        if d.deleted:
                            pipe.hdel(name, *d.deleted)
                            shrunk.append(key)
                        if d.added:
                            pipe.hset(name, mapping={p: encode_file(f) for p, f in d.added.items()})
                            pipe.sadd(parts, key)
                    for key in shrunk:
                        pipe.exists(self.k.layout(table, key))
                    replies = pipe.execute()
                    found = replies[len(replies) - len(shrunk) :]
                    break
                except redis.WatchError:
                    continue
        self._drop_empty(table, [k for k, n in zip(shrunk, found, strict=True) if not n])

    def _drop_empty(self, table: str, keys: list[str]) -> None:
        """Take the partitions left without files out of the set, unless a write refilled
        one since (WATCH: then this one loses, harmlessly)."""
        import redis  # redis-py, slow to import: only when Redis is used

        if not keys:
            return
        names = [self.k.layout(table, k) for k in keys]
        with self.r.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(*names)
                empty = [k for k, name in zip(keys, names, strict=True) if not pipe.exists(name)]
                if not empty:
                    pipe.reset()
                    return
                pipe.multi()
                pipe.srem(self.k.layout_parts(table), *empty)
                pipe.execute()
            except redis.WatchError:
                return

    @translated("layout replace")
    def replace(
        self,
        table: str,
        signature: str,
        files_by_partition: Mapping[str, Sequence[FileBounds[str]]],
    ) -> None:
        import redis  # redis-py, slow to import: only when Redis is used

        state, parts = self.k.layout_state(table), self.k.layout_parts(table)
        kept = {k: files for k, files in sorted(files_by_partition.items()) if files}
        with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(parts)
                    old = [self.k.layout(table, text(k)) for k in pipe.smembers(parts)]
                    pipe.multi()
                    pipe.delete(parts, self.k.layout_depths(table), *old)
                    for key, files in kept.items():
                        mapping = {f.id: encode_file(f) for f in files}
                        pipe.hset(self.k.layout(table, key), mapping=mapping)
                    if kept:
                        pipe.sadd(parts, *kept)
                    pipe.hset(state, "signature", signature)
                    pipe.hincrby(state, "generation", 1)
                    pipe.execute()
                    return
                except redis.WatchError:
                    continue

    @translated("layout partitions")
    def partitions(self, table: str) -> list[str]:
        return sorted(text(k) for k in self.r.smembers(self.k.layout_parts(table)))

    @translated("layout files")
    def files(
        self, table: str, keys: Sequence[str] | None = None
    ) -> dict[str, list[FileBounds[str]]]:
        wanted = self.partitions(table) if keys is None else list(keys)
        if not wanted:
            return {}
        pipe = self.r.pipeline(transaction=False)
        for key in wanted:
            pipe.hgetall(self.k.layout(table, key))
        out = {}
        for key, raw in zip(wanted, pipe.execute(), strict=True):
            if raw:
                files = [decode_file(text(p), v) for p, v in raw.items()]
                out[key] = sorted(files, key=lambda f: f.id)
        return out

    @translated("layout generation")
    def generation(self, table: str) -> int:
        return int(self.r.hget(self.k.layout_state(table), "generation") or 0)

    @translated("layout depths")
    def save_depths(
        self,
        table: str,
        signature: str,
        measured: Mapping[str, Depth],
        generation: int,
        settled: Collection[str] = (),
    ) -> None:
        import redis  # redis-py, slow to import: only when Redis is used

        if not measured:
            return
        state = self.k.layout_state(table)
        with self.r.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(state)  # every change of the files bumps the generation
                stored, now = pipe.hmget(state, "signature", "generation")
                if stored is None or text(stored) != signature or int(now or 0) != generation:
                    pipe.reset()
                    return
                pipe.multi()
                mapping = {k: encode_depth(d, k in settled) for k, d in measured.items()}
                pipe.hset(self.k.layout_depths(table), mapping=mapping)
                pipe.execute()
            except redis.WatchError:
                return  # status measures what is not kept

    @translated("layout depths")
    def saved_depths(self, table: str) -> dict[str, Depth]:
        raw = self.r.hgetall(self.k.layout_depths(table))
        return {text(k): decode_depth(v) for k, v in raw.items()}

    @translated("layout settled")
    def saved_settled(self, table: str) -> set[str]:
        raw = self.r.hgetall(self.k.layout_depths(table))
        return {text(k) for k, v in raw.items() if is_settled(v)}

    @translated("layout forget")
    def forget(self, table: str) -> None:
        parts = self.k.layout_parts(table)
        old = [self.k.layout(table, text(k)) for k in self.r.smembers(parts)]
        self.r.delete(parts, self.k.layout_state(table), self.k.layout_depths(table), *old)
