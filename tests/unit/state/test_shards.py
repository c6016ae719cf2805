"""The shard-lease contract suite on the in-memory board.

``TestMemoryShards`` runs ``ShardsContract`` (``tests/support/contracts/shards.py``);
``tests/redis/test_shards_redis.py`` runs it on a single Redis and on a Redis Cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from icefloe.state.shards import LEASE_FRACTION, Shards
from icefloe.state.shards.memory import MemoryShards, ShardBoard
from tests.support.contracts.shards import ShardsContract

pytestmark = [pytest.mark.unit]


class TestMemoryShards(ShardsContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _board(self) -> None:
        self.board = ShardBoard()

    def make(
        self,
        token: str,
        count: int = 8,
        ttl_seconds: float = 30.0,
        clock: Callable[[], float] | None = None,
    ) -> Shards:
        return MemoryShards(self.board, count, ttl_seconds, token, clock or time.monotonic)


def test_memory_shards_follow_their_clock() -> None:
    now = [0.0]
    board = ShardBoard()
    a = MemoryShards(board, 4, 10, "a", clock=lambda: now[0])
    b = MemoryShards(board, 4, 10, "b", clock=lambda: now[0])
    a.claim()
    lease = 10 * LEASE_FRACTION  # the survivors' reaction fits in the rest of the TTL
    assert b.claim().owned == frozenset() and b.claim().next_lapse == pytest.approx(lease)
    now[0] = lease - 0.1
    assert b.claim().owned == frozenset()
    now[0] = lease
    assert b.claim().owned == frozenset(range(4))
