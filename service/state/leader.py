"""The leader lease: only the leader decides; the other deciders stand by.

On Redis (:class:`RedisLeader`): ``SET NX PX`` takes the lease, a Lua compare-and-extend
(``service/state/lua/leader_extend.lua``) keeps it, a compare-and-delete
(``leader_release.lua``) hands it over at once on a clean shutdown. A leader that dies
stops extending: its lease lapses within the TTL and another decider takes over. In memory
(:class:`MemoryLeader`): the same semantics on a shared :class:`LeaderBoard`, for unit tests.
One contract suite (``tests/unit/service/test_leader.py``) runs against both.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from service.base.keys import Keys
from service.base.redis_client import lua_script, text, translated


class Leader(Protocol):
    """One candidate's handle on the lease."""

    token: str

    def acquire(self) -> bool:
        """True while this candidate is (or just became) the leader; extends its lease."""
        ...

    def release(self) -> None:
        """Give the lease up if this candidate holds it (else nothing happens)."""
        ...

    def holder(self) -> str | None:
        """The token of the current leader, if any."""
        ...


class RedisLeader:
    """A leader lease: ``SET NX PX`` to take it, Lua compare-and-extend to keep it."""

    def __init__(self, client: Any, keys: Keys, ttl_seconds: float, token: str | None = None):
        self.r = client
        self.key = keys.leader
        self.ttl_ms = max(1, int(ttl_seconds * 1000))
        self.token = token or uuid.uuid4().hex
        self._extend = lua_script(client, "leader_extend")
        self._release = lua_script(client, "leader_release")

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


@dataclass
class LeaderBoard:
    """The shared state of :class:`MemoryLeader` candidates: holder and lease deadline."""

    token: str | None = None
    deadline: float = 0.0


class MemoryLeader:
    """The lease in memory; ``clock`` (monotonic seconds) decides expiry."""

    def __init__(
        self,
        board: LeaderBoard | None = None,
        ttl_seconds: float = 30.0,
        token: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.board = board if board is not None else LeaderBoard()
        self.ttl = ttl_seconds
        self.token = token or uuid.uuid4().hex
        self.clock = clock

    def acquire(self) -> bool:
        now = self.clock()
        if self.holder() not in (None, self.token):
            return False
        self.board.token, self.board.deadline = self.token, now + self.ttl
        return True

    def release(self) -> None:
        if self.holder() == self.token:
            self.board.token = None

    def holder(self) -> str | None:
        if self.board.token is not None and self.clock() >= self.board.deadline:
            self.board.token = None  # lapsed
        return self.board.token
