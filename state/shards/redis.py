"""The shard leases on Redis: a members zset and a leases hash in the ``{d}`` slot, one Lua
script per claim and per release (beside this module), timed by the server's clock (or by a
``clock`` given, for tests)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from icefloe.base.keys import Keys
from icefloe.base.redis_client import lua_script, text, translated
from icefloe.state.shards import LEASE_FRACTION, Claim, Shards


class RedisShards(Shards):
    """Shard leases in the ``{d}`` slot: a members zset and a leases hash, one Lua claim.
    ``clock`` (seconds): what times the leases instead of the server's clock (``TIME``, so
    the deciders' clocks need not agree), for tests; every handle on one set of leases
    must then share it."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        count: int,
        ttl_seconds: float,
        token: str | None = None,
        clock: Callable[[], float] | None = None,
    ):
        self.r = client
        self.k = keys
        self.count = count
        self.ttl_ms = max(1, int(ttl_seconds * 1000 * LEASE_FRACTION))
        self.token = token or uuid.uuid4().hex
        self.clock = clock
        self._claim = lua_script(client, Path(__file__).with_name("shards_claim.lua"))
        self._release = lua_script(client, Path(__file__).with_name("shards_release.lua"))

    @property
    def _keys(self) -> list[str]:
        return [self.k.deciders, self.k.shard_leases]

    @translated("shard claim")
    def claim(self) -> Claim:
        args = [self.token, self.ttl_ms, self.count]
        if self.clock is not None:  # else the script reads the server's
            args.append(int(self.clock() * 1000))
        wait_ms, *owned = (int(v) for v in self._claim(keys=self._keys, args=args))
        return Claim(frozenset(owned), None if wait_ms < 0 else wait_ms / 1000)

    @translated("shard release")
    def release(self) -> None:
        self._release(keys=self._keys, args=[self.token])

    @translated("shard holders")
    def holders(self) -> dict[int, str]:
        if self.clock is None:
            now_s, now_us = self.r.time()
            now_ms = int(now_s) * 1000 + int(now_us) // 1000
        else:
            now_ms = int(self.clock() * 1000)
        out = {}
        for shard, value in self.r.hgetall(self.k.shard_leases).items():
            deadline, _, token = text(value).partition(" ")
            if int(deadline) > now_ms:
                out[int(shard)] = token
        return out
