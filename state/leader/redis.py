"""The leader lease on Redis: ``SET NX PX`` takes it, Lua scripts beside this module extend
and release it (compare-and-extend, compare-and-delete)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from icefloe.base.keys import Keys
from icefloe.base.redis_client import lua_script, text, translated
from icefloe.state.leader import Leader


class RedisLeader(Leader):
    def __init__(self, client: Any, keys: Keys, ttl_seconds: float, token: str | None = None):
        self.r = client
        self.key = keys.leader
        self.ttl_ms = max(1, int(ttl_seconds * 1000))
        self.token = token or uuid.uuid4().hex
        self._extend = lua_script(client, Path(__file__).with_name("leader_extend.lua"))
        self._release = lua_script(client, Path(__file__).with_name("leader_release.lua"))

    @translated("leader acquire")
    def acquire(self) -> bool:
        if self.r.set(self.key, self.token, nx=True, px=self.ttl_ms):
            return True
        return bool(self._extend(keys=[self.key], args=[self.token, self.ttl_ms]))

    @translated("leader release")
    def release(self) -> None:
        self._release(keys=[self.key], args=[self.token])

    @translated("leader holder")
    def holder(self) -> str | None:
        raw = self.r.get(self.key)
        return None if raw is None else text(raw)
