"""The leader lease in memory, for unit tests: the semantics of
:class:`icefloe.state.leader.redis.RedisLeader` on a shared :class:`LeaderBoard`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from icefloe.state.leader import Leader


@dataclass
class LeaderBoard:
    """The shared state of :class:`MemoryLeader` candidates: holder and lease deadline."""

    token: str | None = None
    deadline: float = 0.0


class MemoryLeader(Leader):
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
