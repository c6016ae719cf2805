"""The metadata-health store contract suite in memory (``tests/support/contracts/health.py``;
``tests/redis/test_health_redis.py`` runs it on Redis)."""

from __future__ import annotations

import pytest

from service.state.health import HealthStore
from service.state.health.memory import MemoryHealth
from tests.support.contracts.health import HealthContract

pytestmark = [pytest.mark.unit]


class TestMemoryHealth(HealthContract):
    __test__ = True

    def make_store(self) -> HealthStore:
        return MemoryHealth()
