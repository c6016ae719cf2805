"""The stats-store contract suite on the in-memory store, and its own launch guard.

``TestMemoryStats`` runs ``StatsContract`` (``tests/support/contracts/rolling.py``) on the
in-memory store; ``tests/redis/test_rolling_redis.py`` runs it on Redis.
"""

from __future__ import annotations

import pytest

from service.state.rolling import MemoryStats, StatsStore
from tests.support.contracts.rolling import T0, StatsContract

pytestmark = [pytest.mark.unit]


class TestMemoryStats(StatsContract):
    __test__ = True

    def make_store(self) -> StatsStore:
        return MemoryStats()


def test_memory_launch_guard_expires() -> None:
    store = MemoryStats()
    assert store.claim_launch(T0, 10) and not store.claim_launch(T0 + 9, 10)
    assert store.claim_launch(T0 + 10, 10)
