"""The leader-lease contract suite on the in-memory board.

``TestMemoryLeader`` runs ``LeaderContract`` (``tests/support/contracts/leader.py``);
``tests/redis/test_leader_redis.py`` runs it on Redis.
"""

from __future__ import annotations

import pytest

from icefloe.state.leader import Leader
from icefloe.state.leader.memory import LeaderBoard, MemoryLeader
from tests.support.contracts.leader import LeaderContract

pytestmark = [pytest.mark.unit]


class TestMemoryLeader(LeaderContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _board(self) -> None:
        self.board = LeaderBoard()

    def make_leader(self, token: str, ttl_seconds: float = 30.0) -> Leader:
        return MemoryLeader(self.board, ttl_seconds, token)


def test_memory_leader_follows_its_clock() -> None:
    now = [0.0]
    board = LeaderBoard()
    a = MemoryLeader(board, 10, "a", clock=lambda: now[0])
    b = MemoryLeader(board, 10, "b", clock=lambda: now[0])
    assert a.acquire() and not b.acquire()
    now[0] = 9.9
    assert not b.acquire()
    now[0] = 10.0
    assert b.acquire() and b.holder() == "b"
