"""The stats-store contract suite on the in-memory store.

``TestMemoryStats`` runs ``StatsContract`` (``tests/support/contracts/rolling.py``) on the
in-memory store; ``tests/redis/test_rolling_redis.py`` runs it on Redis.
"""

from __future__ import annotations

import pytest

from service.state.ledger.memory import MemoryLedger
from service.state.rolling import StatsStore
from service.state.rolling.memory import MemoryStats
from tests.support.contracts.rolling import StatsContract

pytestmark = [pytest.mark.unit]


class TestMemoryStats(StatsContract):
    __test__ = True

    def make_store(self) -> StatsStore:
        self.ledger = MemoryLedger()
        return MemoryStats(self.ledger)

    def counters(self) -> dict[str, int]:
        return self.ledger.counters()
